/// A primary account number that has passed every check: digits only, 12–19 long, Luhn-valid, of a known brand
/// and a length that brand issues.
///
/// Its `description`, `debugDescription` and reflection show only the ``alias`` (first six, `X`s, last four), so
/// interpolating a `PAN` into a log line or an error cannot leak it. The full number is reachable only through
/// ``withASCIIDigits(_:)`` and ``unmaskedDigits``, for the vault's encryption and fingerprinting.
///
/// The digits are held as one 64-bit integer plus a length (19 digits fit), so a `PAN` allocates nothing.
public struct PAN: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    @usableFromInline let value: UInt64
    @usableFromInline let count: UInt8
    /// The brand that issued the number.
    public let brand: CardBrand

    /// Parses a card number as a shopper types it: digits, with any spaces and dashes ignored.
    /// - Throws: ``CardValidationError`` with code `invalidCharacter`, `invalidLength`, `luhnFailed` or
    ///   `unknownBrand` (and `invalidLength` when the brand issues no numbers of that length).
    public init(_ text: String, catalog: borrowing BrandCatalog = .standard) throws(CardValidationError) {
        var buffer: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes of stack: room for 19 digits
        let result: Result<PAN, CardValidationError> = withUnsafeMutableBytes(of: &buffer) { raw in
            var length = 0
            var tooLong = false
            for byte in text.utf8 {
                if byte == 0x20 || byte == 0x2D { continue }
                guard byte &- 0x30 < 10 else { return .failure(.invalidCharacter) }
                if length < raw.count {
                    raw[length] = byte
                    length += 1
                } else {
                    tooLong = true
                }
            }
            defer { raw.initializeMemory(as: UInt8.self, repeating: 0) }
            if tooLong { return .failure(.invalidLength) }
            let digits = UnsafeBufferPointer(rebasing: raw.bindMemory(to: UInt8.self)[0..<length])
            return Result { () throws(CardValidationError) in try PAN(validating: digits, catalog: catalog) }
        }
        self = try result.get()
    }

    /// Builds a PAN from ASCII digits only (no separators), as stored in the vault.
    /// - Throws: ``CardValidationError`` as ``init(_:catalog:)``.
    public init(
        validating digits: UnsafeBufferPointer<UInt8>, catalog: borrowing BrandCatalog = .standard
    )
        throws(CardValidationError)
    {
        let check = CardNumberCheck(asciiDigits: digits, catalog: catalog)
        if let failure = check.failure { throw CardValidationError.forCode(failure) }
        guard let brand = check.brand else { throw CardValidationError.unknownBrand }
        var value: UInt64 = 0
        for byte in digits { value = value &* 10 &+ UInt64(byte &- 0x30) }
        self.value = value
        self.count = UInt8(digits.count)
        self.brand = brand
    }

    /// The number of digits.
    public var length: Int { Int(count) }

    /// Calls `body` with the full number as ASCII digits in a temporary stack buffer. Do not let them escape.
    /// (Inlinable, so that callers in other modules run it specialized.)
    @inlinable
    public func withASCIIDigits<R, E: Error>(_ body: (UnsafeBufferPointer<UInt8>) throws(E) -> R) throws(E) -> R {
        var buffer: (UInt64, UInt64, UInt64) = (0, 0, 0)
        let length = Int(count)
        let result: Result<R, E> = withUnsafeMutableBytes(of: &buffer) { raw in
            var rest = value
            var index = length
            while index > 0 {
                index -= 1
                raw[index] = UInt8(truncatingIfNeeded: rest % 10) &+ 0x30
                rest /= 10
            }
            let digits = UnsafeBufferPointer(rebasing: raw.bindMemory(to: UInt8.self)[0..<length])
            defer { raw.initializeMemory(as: UInt8.self, repeating: 0) }
            return Result { () throws(E) in try body(digits) }
        }
        return try result.get()
    }

    /// The full number as a string of digits. Only for code that must hand it on (encryption, the card network);
    /// never log, store in clear, or return it to a merchant.
    public var unmaskedDigits: String {
        withASCIIDigits { String(decoding: $0, as: UTF8.self) }
    }

    /// The first six digits (the BIN as the alias shows it).
    public var bin: String { leading(6) }

    /// The first eight digits (ISO/IEC 7812 eight-digit IIN), for numbers of 16 digits or more, where PCI DSS
    /// (FAQ 1492) allows showing them; nil for shorter numbers.
    public var bin8: String? { count >= 16 ? leading(8) : nil }

    /// The last four digits.
    public var last4: String {
        withASCIIDigits { String(decoding: UnsafeBufferPointer(rebasing: $0[($0.count - 4)...]), as: UTF8.self) }
    }

    /// The masked form: first six, an `X` for each hidden digit, last four (`497010XXXXXX1119`). The only form in
    /// which a PAN leaves the vault towards merchants.
    public var alias: String {
        withASCIIDigits { digits in
            String(unsafeUninitializedCapacity: digits.count) { out in
                for index in 0..<digits.count {
                    out[index] = index < 6 || index >= digits.count - 4 ? digits[index] : 0x58
                }
                return digits.count
            }
        }
    }

    public var description: String { alias }
    public var debugDescription: String { "PAN(\(alias))" }
    public var customMirror: Mirror { Mirror(self, children: ["alias": alias, "brand": brand], displayStyle: .struct) }

    private func leading(_ n: Int) -> String {
        withASCIIDigits { String(decoding: UnsafeBufferPointer(rebasing: $0[0..<n]), as: UTF8.self) }
    }
}
