/// Mangopay's `CardType` of a card registration: which group of brands a registration of that type accepts.
///
/// Values from the Mangopay docs (`CB_VISA_MASTERCARD` (default), `AMEX`, `MAESTRO`, `BCMC`) and the Python SDK
/// enum (`DINERS`, `MASTERPASS`, `P24`, `IDEAL`, `PAYLIB`); `JCB` as the issue lists it.
/// See /work/shared/reference/mangopay-api.md, sections 2 and 4.
public enum MangopayCardType: String, CaseIterable, Hashable, Sendable, Codable {
    case cbVisaMastercard = "CB_VISA_MASTERCARD"
    case amex = "AMEX"
    case maestro = "MAESTRO"
    case bcmc = "BCMC"
    case diners = "DINERS"
    case jcb = "JCB"
    case masterpass = "MASTERPASS"
    case p24 = "P24"
    case ideal = "IDEAL"
    case paylib = "PAYLIB"

    /// The type a registration gets when the request names none.
    public static let `default` = MangopayCardType.cbVisaMastercard

    /// The brands whose card numbers a registration of this type accepts at tokenization.
    ///
    /// CB (Cartes Bancaires) cards are co-badged on Visa or Mastercard numbers, and Bancontact (BCMC) cards on
    /// Maestro numbers, so neither needs a range of its own. `MASTERPASS`, `P24`, `IDEAL` and `PAYLIB` are wallet
    /// and bank methods whose card numbers never reach the tokenization endpoint: they accept none.
    public var acceptedBrands: Set<CardBrand> {
        switch self {
        case .cbVisaMastercard: [.visa, .mastercard]
        case .amex: [.amex]
        case .maestro, .bcmc: [.maestro]
        case .diners: [.diners]
        case .jcb: [.jcb]
        case .masterpass, .p24, .ideal, .paylib: []
        }
    }

    /// True when a registration of this type accepts a card of `brand`.
    public func accepts(_ brand: CardBrand) -> Bool { acceptedBrands.contains(brand) }
}

/// Mangopay's `CardProvider` of a card: the scheme shown on the Card object.
///
/// Values from the Mangopay docs Card object (`CB`, `VISA`, `MASTERCARD`, `AMEX`, `MAESTRO`, `BCMC`, `JCB`,
/// `DISCOVER`) and `DINERS` as the issue lists it. See /work/shared/reference/mangopay-api.md, section 4.
public enum MangopayCardProvider: String, CaseIterable, Hashable, Sendable, Codable {
    case cb = "CB"
    case visa = "VISA"
    case mastercard = "MASTERCARD"
    case amex = "AMEX"
    case maestro = "MAESTRO"
    case bcmc = "BCMC"
    case diners = "DINERS"
    case jcb = "JCB"
    case discover = "DISCOVER"

    /// The provider Mangopay names for a card of `brand`, or nil for brands it has no name for (Elo, Mir, …).
    ///
    /// `CB` and `BCMC` are domestic schemes co-badged on Visa/Mastercard and Maestro numbers; the number alone
    /// cannot tell them apart, so detection yields the international brand.
    public init?(brand: CardBrand) {
        switch brand {
        case .visa: self = .visa
        case .mastercard: self = .mastercard
        case .amex: self = .amex
        case .maestro: self = .maestro
        case .diners: self = .diners
        case .jcb: self = .jcb
        case .discover: self = .discover
        case .unionpay, .mir, .elo, .hiper, .hipercard, .troy, .verve, .rupay, .naranja: return nil
        }
    }
}
