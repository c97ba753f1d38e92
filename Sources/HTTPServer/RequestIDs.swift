import Synchronization

/// Hands out request ids: a random per-process prefix and a counter, so making one costs an atomic
/// add and a short rendering (no UUID). Ids the server makes are letters only (`a`–`p` stand for the
/// sixteen hex digits), so they pass ``isAcceptable(_:)`` themselves when a client sends one back.
public final class RequestIDs: Sendable {
    /// The header that carries the id both ways.
    public static let headerName = "X-Request-Id"
    /// The longest run of digits an accepted id may hold, counted across `.`, `-` and `_` (so
    /// `4970.1073.6205.4174` is one run of 16): three, so no part of a card number (not even a
    /// 4-digit group of one) is echoed or logged.
    public static let maximumDigitRun = 3

    private let prefix: [UInt8]
    private let counter = Atomic<UInt64>(0)
    private static let letterDigits = Array("abcdefghijklmnop".utf8)

    public init() {
        var generator = SystemRandomNumberGenerator()
        let random = generator.next() & 0xFFFF_FFFF_FFFF
        var bytes: [UInt8] = []
        for shift in stride(from: 44, through: 0, by: -4) {
            bytes.append(Self.letterDigits[Int((random >> UInt64(shift)) & 0xF)])
        }
        bytes.append(UInt8(ascii: "-"))
        prefix = bytes
    }

    /// A new id, unique within this process: `<12 letters>-<counter in letter-hex>`.
    public func next() -> String {
        var value = counter.add(1, ordering: .relaxed).newValue
        var digits = 1
        while value >> UInt64(4 * digits) != 0 && digits < 16 { digits += 1 }
        return String(unsafeUninitializedCapacity: prefix.count + digits) { buffer in
            for (index, byte) in prefix.enumerated() { buffer[index] = byte }
            var position = prefix.count + digits - 1
            for _ in 0..<digits {
                buffer[position] = Self.letterDigits[Int(value & 0xF)]
                value >>= 4
                position -= 1
            }
            return prefix.count + digits
        }
    }

    /// The client's id if it is safe to echo and log, otherwise a new one. Safe: 8–64 characters of
    /// `A–Z a–z 0–9 . _ -`, and no run of more than ``maximumDigitRun`` digits (separators do not end
    /// a run; only a letter does).
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
                if digits > maximumDigitRun { return false }
            case 0x2D, 0x2E, 0x5F:
                continue  // card numbers are written 4970-1011-..., 4970.1011... or 4970_1011...
            case 0x41...0x5A, 0x61...0x7A:
                digits = 0
            default:
                return false
            }
        }
        return true
    }
}
