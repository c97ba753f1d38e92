import Synchronization

/// Hands out request ids: a random per-process prefix and a counter, so making one costs an atomic
/// add and a short hex rendering (no UUID).
public final class RequestIDs: Sendable {
    /// The header that carries the id both ways.
    public static let headerName = "X-Request-Id"

    private let prefix: [UInt8]
    private let counter = Atomic<UInt64>(0)
    private static let hexDigits = Array("0123456789abcdef".utf8)

    public init() {
        var generator = SystemRandomNumberGenerator()
        let random = generator.next() & 0xFFFF_FFFF_FFFF
        var bytes: [UInt8] = []
        for shift in stride(from: 44, through: 0, by: -4) {
            bytes.append(Self.hexDigits[Int((random >> UInt64(shift)) & 0xF)])
        }
        bytes.append(UInt8(ascii: "-"))
        prefix = bytes
    }

    /// A new id, unique within this process: `<12 hex digits>-<counter in hex>`.
    public func next() -> String {
        var value = counter.add(1, ordering: .relaxed).newValue
        var digits = 1
        while value >> UInt64(4 * digits) != 0 && digits < 16 { digits += 1 }
        return String(unsafeUninitializedCapacity: prefix.count + digits) { buffer in
            for (index, byte) in prefix.enumerated() { buffer[index] = byte }
            var position = prefix.count + digits - 1
            for _ in 0..<digits {
                buffer[position] = Self.hexDigits[Int(value & 0xF)]
                value >>= 4
                position -= 1
            }
            return prefix.count + digits
        }
    }

    /// The client's id if it is sane (8–64 characters of `A–Z a–z 0–9 . _ -`, and no run of twelve
    /// digits that could be a card number), otherwise a new one.
    public func accept(_ incoming: String?) -> String {
        if let incoming, Self.isAcceptable(incoming) { return incoming }
        return next()
    }

    static func isAcceptable(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard utf8.count >= 8 && utf8.count <= 64 else { return false }
        var digits = 0
        for byte in utf8 {
            switch byte {
            case 0x30...0x39:
                digits += 1
                if digits >= LogScrubber.minimumRun { return false }
            case 0x2D:
                continue  // a dash does not end a digit run: card numbers are written 4970-1011-...
            case 0x41...0x5A, 0x61...0x7A, 0x2E, 0x5F:
                digits = 0
            default:
                return false
            }
        }
        return true
    }
}
