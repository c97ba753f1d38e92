/// A card scheme that issues card numbers, with the lengths its numbers have and the security code it prints.
///
/// The raw value is the stable identifier used on the wire and in `cardvault inspect` output (`"visa"`).
/// Which numbers belong to which brand is in ``BrandCatalog``.
public enum CardBrand: String, CaseIterable, Hashable, Sendable, Codable {
    case visa
    case mastercard
    case amex
    case discover
    case diners
    case jcb
    case unionpay
    case maestro
    case mir
    case elo
    case hiper
    case hipercard
    case troy
    case verve
    case rupay
    case naranja

    /// The stable identifier (`"visa"`, `"amex"`).
    public var id: String { rawValue }

    /// The name to show to people.
    public var displayName: String {
        switch self {
        case .visa: "Visa"
        case .mastercard: "Mastercard"
        case .amex: "American Express"
        case .discover: "Discover"
        case .diners: "Diners Club"
        case .jcb: "JCB"
        case .unionpay: "UnionPay"
        case .maestro: "Maestro"
        case .mir: "Mir"
        case .elo: "Elo"
        case .hiper: "Hiper"
        case .hipercard: "Hipercard"
        case .troy: "Troy"
        case .verve: "Verve"
        case .rupay: "RuPay"
        case .naranja: "Naranja"
        }
    }

    /// The number of digits a card number of this brand may have.
    ///
    /// Source: braintree/credit-card-type `src/lib/card-types.ts` (`lengths`); RuPay from the Wikipedia table
    /// "Payment card number" (16). See /work/shared/reference/vaults-pci-brands.md section 5.
    public var lengths: CardLengths {
        switch self {
        case .visa: [16, 18, 19]
        case .mastercard: [16]
        case .amex: [15]
        case .discover: [16, 19]
        case .diners: [14, 16, 19]
        case .jcb: [16, 17, 18, 19]
        case .unionpay: [14, 15, 16, 17, 18, 19]
        case .maestro: [12, 13, 14, 15, 16, 17, 18, 19]
        case .mir: [16, 17, 18, 19]
        case .elo, .hiper, .hipercard, .troy, .rupay, .naranja: [16]
        case .verve: [16, 18, 19]
        }
    }

    /// The card security code (CVX) this brand prints: its name and number of digits.
    public var securityCode: SecurityCodeSpec {
        switch self {
        case .visa, .diners, .jcb, .troy, .verve, .rupay, .naranja: SecurityCodeSpec(name: "CVV", size: 3)
        case .mastercard, .maestro, .hiper, .hipercard: SecurityCodeSpec(name: "CVC", size: 3)
        case .amex: SecurityCodeSpec(name: "CID", size: 4)
        case .discover: SecurityCodeSpec(name: "CID", size: 3)
        case .unionpay: SecurityCodeSpec(name: "CVN", size: 3)
        case .elo: SecurityCodeSpec(name: "CVE", size: 3)
        case .mir: SecurityCodeSpec(name: "CVP2", size: 3)
        }
    }

    /// True when a number of `length` digits is a valid length for this brand.
    @inlinable
    public func acceptsLength(_ length: Int) -> Bool { lengths.contains(length) }
}

/// The name and size of a brand's card security code (CVV, CVC, CID, CVN, CVE, CVP2).
public struct SecurityCodeSpec: Hashable, Sendable {
    /// What the brand calls it (`"CVV"`, `"CID"`).
    public let name: String
    /// The exact number of digits.
    public let size: Int

    /// Creates a specification.
    public init(name: String, size: Int) {
        self.name = name
        self.size = size
    }
}

/// A small set of card number lengths (each 0–63), stored as a bit mask so that membership is one instruction.
public struct CardLengths: Hashable, Sendable, ExpressibleByArrayLiteral, Sequence {
    @usableFromInline let mask: UInt64

    /// Creates the set of the given lengths.
    public init(arrayLiteral elements: Int...) {
        var mask: UInt64 = 0
        for element in elements where (0..<64).contains(element) { mask |= 1 << UInt64(element) }
        self.mask = mask
    }

    /// True when `length` is in the set.
    @inlinable
    public func contains(_ length: Int) -> Bool {
        guard length >= 0, length < 64 else { return false }
        return mask & (1 << UInt64(length)) != 0
    }

    /// The lengths in ascending order.
    public func makeIterator() -> some IteratorProtocol<Int> {
        (0..<64).lazy.filter { self.contains($0) }.makeIterator()
    }
}
