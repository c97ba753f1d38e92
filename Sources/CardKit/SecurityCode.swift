/// A card security code (CVV, CVC, CID, …) that has passed its brand's rule: digits only, exactly the brand's size.
///
/// It prints as asterisks; the digits are reachable only through ``unmaskedDigits``. It is never to be written to
/// disk (PCI DSS 3.3.1.2).
public struct SecurityCode: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    private let digits: String

    /// Validates `text` against the security code rule of `brand`.
    /// - Throws: ``CardValidationError`` `invalidSecurityCode`.
    public init(_ text: String, brand: CardBrand) throws(CardValidationError) {
        guard Self.isValid(text, for: brand) else { throw .invalidSecurityCode }
        digits = text
    }

    /// True when `text` is digits only and exactly as long as `brand` asks for.
    public static func isValid(_ text: String, for brand: CardBrand) -> Bool {
        var count = 0
        for byte in text.utf8 {
            guard byte &- 0x30 < 10 else { return false }
            count += 1
        }
        return count == brand.securityCode.size
    }

    /// The digits, for the one call that hands them to the card network.
    public var unmaskedDigits: String { digits }

    public var description: String { "***" }
    public var debugDescription: String { "SecurityCode(***)" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
