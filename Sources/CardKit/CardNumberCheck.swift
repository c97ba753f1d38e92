/// The outcome of checking a card number's digits: brand, Luhn, length, and the first reason it is not valid.
///
/// This is the allocation-free entry point for hot paths and the benchmark; ``PAN`` builds on it.
public struct CardNumberCheck: Hashable, Sendable {
    /// The shortest card number ISO/IEC 7812 allows here.
    public static let minimumLength = 12
    /// The longest card number.
    public static let maximumLength = 19

    /// The number of digits checked.
    public let length: Int
    /// The detected brand, or nil when no range matches (or the input was not all digits).
    public let brand: CardBrand?
    /// True when the digits pass the Luhn check.
    public let luhnValid: Bool
    /// True when the length suits the brand (or, without a brand, lies within 12–19).
    public let lengthValid: Bool
    /// The first reason the number is not a valid card number, or nil when it is.
    public let failure: CardValidationError.Code?

    /// True when the number is a valid card number of a known brand.
    public var isValid: Bool { failure == nil }

    /// Checks ASCII digits (no separators): Luhn, brand, length. Allocates nothing.
    /// - Parameters:
    ///   - digits: the card number as ASCII digits, most significant first.
    ///   - catalog: the brand table to detect with.
    public init(asciiDigits digits: UnsafeBufferPointer<UInt8>, catalog: borrowing BrandCatalog = .standard) {
        let count = digits.count
        length = count
        let luhn = Luhn.isValid(digits)
        luhnValid = luhn
        var allDigits = true
        if !luhn {
            for byte in digits where byte &- 0x30 >= 10 {
                allDigits = false
                break
            }
        }
        let detected = allDigits ? catalog.brand(forDigits: digits) : nil
        brand = detected
        let generalLength = (Self.minimumLength...Self.maximumLength).contains(count)
        let suitsBrand = detected.map { $0.acceptsLength(count) } ?? generalLength
        lengthValid = suitsBrand
        if !allDigits {
            failure = .invalidCharacter
        } else if !generalLength {
            failure = .invalidLength
        } else if !luhn {
            failure = .luhnFailed
        } else if detected == nil {
            failure = .unknownBrand
        } else if !suitsBrand {
            failure = .invalidLength
        } else {
            failure = nil
        }
    }

    /// Checks ASCII digits given as a string (no separators).
    public init(asciiDigits digits: String, catalog: BrandCatalog = .standard) {
        var copy = digits
        self = copy.withUTF8 { CardNumberCheck(asciiDigits: $0, catalog: catalog) }
    }
}
