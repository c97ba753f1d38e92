/// A Masterpass `allowedCardTypes` value: the networks a merchant accepts in a hosted checkout.
///
/// Values from the Masterpass merchant integration (`master`, `visa`, `amex`, `discover`, `diners`, `maestro`) and
/// the merchant JavaScript samples (`jcb`). See /work/shared/reference/masterpass-src-3ds.md (checkout parameters)
/// and the SDK guides in /work/shared/seeds/.
public enum MasterpassCardType: String, CaseIterable, Hashable, Sendable, Codable {
    case master
    case visa
    case amex
    case discover
    case diners
    case maestro
    case jcb

    /// The Masterpass name for `brand`, or nil when Masterpass does not carry that network.
    public init?(brand: CardBrand) {
        switch brand {
        case .mastercard: self = .master
        case .visa: self = .visa
        case .amex: self = .amex
        case .discover: self = .discover
        case .diners: self = .diners
        case .maestro: self = .maestro
        case .jcb: self = .jcb
        case .unionpay, .mir, .elo, .hiper, .hipercard, .troy, .verve, .rupay, .naranja: return nil
        }
    }

    /// The brand this card type stands for.
    public var brand: CardBrand {
        switch self {
        case .master: .mastercard
        case .visa: .visa
        case .amex: .amex
        case .discover: .discover
        case .diners: .diners
        case .maestro: .maestro
        case .jcb: .jcb
        }
    }

    /// Parses an `allowedCardTypes` list whose items may themselves be comma-joined (the URL form and some JS
    /// samples send `"master,amex,visa"` as one item). Items are trimmed of spaces and matched case-insensitively.
    /// - Returns: the set of card types, or nil when an item names no known type or the list is empty.
    public static func parseList(_ items: [String]) -> Set<MasterpassCardType>? {
        var result = Set<MasterpassCardType>()
        for item in items {
            for part in item.split(separator: ",", omittingEmptySubsequences: false) {
                let name = part.trimmingSpaces().lowercased()
                guard let type = MasterpassCardType(rawValue: name) else { return nil }
                result.insert(type)
            }
        }
        return result.isEmpty ? nil : result
    }
}

extension Substring {
    /// The substring without leading and trailing spaces.
    fileprivate func trimmingSpaces() -> Substring {
        var text = self
        while text.first == " " { text.removeFirst() }
        while text.last == " " { text.removeLast() }
        return text
    }
}
