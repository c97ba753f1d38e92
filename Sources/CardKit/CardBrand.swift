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
    public var lengths: CardLengths { CardLengths(mask: lengthMask) }

    /// The lengths as a bit mask (bit n set: n digits allowed); a switch over constants, so the hot path never
    /// builds an array.
    private var lengthMask: UInt64 {
        let l12: UInt64 = 1 << 12
        let l13: UInt64 = 1 << 13
        let l14: UInt64 = 1 << 14
        let l15: UInt64 = 1 << 15
        let l16: UInt64 = 1 << 16
        let l17: UInt64 = 1 << 17
        let l18: UInt64 = 1 << 18
        let l19: UInt64 = 1 << 19
        switch self {
        case .visa: return l16 | l18 | l19
        case .mastercard: return l16
        case .amex: return l15
        case .discover: return l16 | l19
        case .diners: return l14 | l16 | l19
        case .jcb: return l16 | l17 | l18 | l19
        case .unionpay: return l14 | l15 | l16 | l17 | l18 | l19
        case .maestro: return l12 | l13 | l14 | l15 | l16 | l17 | l18 | l19
        case .mir: return l16 | l17 | l18 | l19
        case .elo, .hiper, .hipercard, .troy, .rupay, .naranja: return l16
        case .verve: return l16 | l18 | l19
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
    public func acceptsLength(_ length: Int) -> Bool {
        length >= 0 && length < 64 && lengthMask & (1 << UInt64(length)) != 0
    }
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
    let mask: UInt64

    init(mask: UInt64) { self.mask = mask }

    /// Creates the set of the given lengths.
    public init(arrayLiteral elements: Int...) {
        var mask: UInt64 = 0
        for element in elements where (0..<64).contains(element) { mask |= 1 << UInt64(element) }
        self.mask = mask
    }

    /// True when `length` is in the set.
    public func contains(_ length: Int) -> Bool {
        guard length >= 0, length < 64 else { return false }
        return mask & (1 << UInt64(length)) != 0
    }

    /// The lengths in ascending order.
    public func makeIterator() -> some IteratorProtocol<Int> {
        (0..<64).lazy.filter { self.contains($0) }.makeIterator()
    }
}
