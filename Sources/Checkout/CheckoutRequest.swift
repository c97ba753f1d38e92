public import CardKit
import Foundation

/// A cryptogram format a merchant accepts for a card type (`masterCryptoFormat=UCAF,ICC`).
public enum CheckoutCryptoFormat: String, Sendable, Hashable, Codable, CaseIterable, Comparable {
    /// Full EMV chip data (DE 55): the most secure, chosen whenever it is accepted.
    case icc = "ICC"
    /// Universal Cardholder Authentication Field (DE 48 SE 43).
    case ucaf = "UCAF"
    /// Visa token authentication verification value, as newer Mastercard sources spell it.
    case tavv = "TAVV"
    /// Visa, as the MCSCommerceWeb README spells it.
    case tvv = "TVV"

    /// Preference order: ICC, UCAF, TAVV, TVV.
    public static func < (lhs: Self, rhs: Self) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// The formats a card type can carry: TAVV/TVV for Visa, ICC/UCAF for the others.
    static func accepted(by type: MasterpassCardType) -> Set<CheckoutCryptoFormat> {
        type == .visa ? [.tavv, .tvv] : [.icc, .ucaf]
    }

    /// The format used when a request names none for a card type: UCAF (TAVV for Visa).
    static func defaultFormat(for type: MasterpassCardType) -> CheckoutCryptoFormat {
        type == .visa ? .tavv : .ucaf
    }
}

/// The language of the hosted pages. `en_US` and `fr_FR` have string tables; other well-formed locales fall back
/// to the table of their language when there is one, else to `en_US`.
public enum CheckoutLocale: String, Sendable, Hashable, Codable, CaseIterable {
    case enUS = "en_US"
    case frFR = "fr_FR"

    /// The `lang` attribute (`en-US`).
    public var languageTag: String { rawValue.replacingOccurrences(of: "_", with: "-") }

    /// Parses `en_US`, `en-us`, `fr`, `fr_CA`, ...; nil when `text` is not `ll` or `ll_CC`/`ll-CC`.
    public init?(parsing text: String) {
        let bytes = Array(text.utf8)
        let letters = { (slice: ArraySlice<UInt8>) in slice.allSatisfy(CheckoutCallbackURL.isAlpha) }
        guard
            (bytes.count == 2 && letters(bytes[0..<2]))
                || (bytes.count == 5 && letters(bytes[0..<2]) && (bytes[2] == 0x5F || bytes[2] == 0x2D)
                    && letters(bytes[3..<5]))
        else { return nil }
        self = text.prefix(2).lowercased() == "fr" ? .frFR : .enUS
    }
}

/// How the shopper reached the checkout: a mobile app's web view or a desktop/mobile browser.
public enum CheckoutChannel: String, Sendable, Hashable, Codable, CaseIterable {
    case web
    case mobile
}

/// A checkout request as a checkout URL carries it (`/srci/?checkoutId=…&cartId=…&amount=…`), parsed and
/// validated field by field. Field names and rules follow the Masterpass / MCSCommerceWeb checkout request
/// (see /work/shared/reference/masterpass-src-3ds.md §2 and the SDK guides): amount positive with at most the
/// currency's decimals (`12.456` USD is refused), ISO 4217 currency, known card types, cartId required.
///
/// Both spellings the SDKs use are accepted: `suppress3Ds`/`suppress3DS`, `shippingLocationProfile`/
/// `shippingLocationProfiles`. Crypto options come flattened (`masterCryptoFormat=UCAF,ICC`, one
/// `<cardType>CryptoFormat` per type) or as a JSON `cryptoOptions` array
/// (`[{"cardType":"master","format":["ICC","UCAF"]}]`). Unknown parameters (`platform`, `sdkVersion`) are ignored;
/// a known one given twice is an error.
public struct CheckoutRequest: Sendable, Equatable, Codable {
    public var checkoutId: String
    public var cartId: String
    /// The amount in minor units of ``currency``; see ``amount``.
    public var amountMinorUnits: Int64
    public var currency: Currency
    public var allowedCardTypes: Set<MasterpassCardType>
    public var callbackURL: CheckoutCallbackURL?
    public var suppressShippingAddress: Bool
    public var locale: CheckoutLocale
    public var channel: CheckoutChannel
    /// Accepted formats per card type; types the request did not mention get their default.
    public var cryptoOptions: [MasterpassCardType: Set<CheckoutCryptoFormat>]
    public var cvc2Support: Bool
    public var suppress3DS: Bool
    /// The merchant's EMV unpredictable number (base64 alphabet), or nil to let CardVault generate one.
    public var unpredictableNumber: String?
    public var validityPeriodMinutes: Int
    /// ISO 3166 alpha-2 countries the merchant ships to; nil for anywhere.
    public var shippingCountries: [String]?
    /// The merchant's shopper id, for express checkout pairing.
    public var userId: String?

    /// The transaction total.
    public var amount: Money { Money(minorUnits: amountMinorUnits, currency: currency) }

    /// The default cryptogram lifetime, in minutes (the value the Masterpass samples use).
    public static let defaultValidityPeriodMinutes = 30
    /// The longest cryptogram lifetime accepted, in minutes (one day).
    public static let maximumValidityPeriodMinutes = 1440

    static let cardTypeNames = MasterpassCardType.allCases.map(\.rawValue).joined(separator: ", ")

    /// The parameters this parser reads; any other is ignored.
    static let knownNames: Set<String> = {
        var names: Set<String> = [
            "checkoutId", "cartId", "amount", "currency", "allowedCardTypes", "callbackUrl", "suppressShippingAddress",
            "locale", "channel", "cryptoOptions", "cvc2Support", "suppress3Ds", "suppress3DS", "unpredictableNumber",
            "validityPeriodMinutes", "shippingLocationProfile", "shippingLocationProfiles", "userId",
        ]
        for type in MasterpassCardType.allCases { names.insert(type.rawValue + "CryptoFormat") }
        return names
    }()

    /// The format a cryptogram for `type` uses: the most secure one the request accepts (ICC when both ICC and
    /// UCAF are), or the type's default when the request named none.
    public func cryptoType(for type: MasterpassCardType) -> CheckoutCryptoFormat {
        cryptoOptions[type]?.min() ?? CheckoutCryptoFormat.defaultFormat(for: type)
    }

    /// Parses `items` (name, value pairs in URL order, already percent-decoded).
    /// - Throws: ``CheckoutError`` `.invalidRequest` with one ``CheckoutFieldError`` per bad field, in the order
    ///   of the parameter table.
    public init(queryItems items: [(String, String)]) throws(CheckoutError) {
        var errors = CheckoutFieldErrors()
        var values: [String: String] = [:]
        for (name, value) in items where Self.knownNames.contains(name) {
            if values[name] != nil {
                errors.add(name, "\(name) must be given only once")
            } else {
                values[name] = value
            }
        }

        // checkoutId
        let checkoutId = values["checkoutId"] ?? ""
        if checkoutId.isEmpty {
            errors.add("checkoutId", "checkoutId is required")
        } else if !CheckoutRegistration.isWellFormedCheckoutId(checkoutId) {
            errors.add("checkoutId", "checkoutId must be 8 to 64 letters and digits")
        }
        // cartId
        let cartId = values["cartId"] ?? ""
        if cartId.isEmpty {
            errors.add("cartId", "cartId is required")
        } else if !Self.isPrintableToken(cartId, maximum: 128) {
            errors.add("cartId", "cartId must be at most 128 printable characters without spaces")
        }
        // currency, then amount (which needs the currency's decimals)
        var currency: Currency?
        if let code = values["currency"], !code.isEmpty {
            currency = Currency(code: code)
            if currency == nil { errors.add("currency", "currency must be an ISO 4217 code such as USD or EUR") }
        } else {
            errors.add("currency", "currency is required")
        }
        var amount = Money(minorUnits: 0, currency: currency ?? .usd)
        if let text = values["amount"], !text.isEmpty {
            if let parsed = Self.amount(text, currency: currency, errors: &errors) {
                amount = parsed
                if amount.minorUnits == 0 { errors.add("amount", "amount must be greater than zero") }
            }
        } else {
            errors.add("amount", "amount is required")
        }
        // allowedCardTypes
        var allowedCardTypes = Set<MasterpassCardType>()
        if let text = values["allowedCardTypes"], !text.isEmpty {
            if let parsed = MasterpassCardType.parseList([text]) {
                allowedCardTypes = parsed
            } else {
                errors.add(
                    "allowedCardTypes", "allowedCardTypes must be a comma-separated list of " + Self.cardTypeNames)
            }
        } else {
            errors.add("allowedCardTypes", "allowedCardTypes is required")
        }
        // callbackUrl
        var callbackURL: CheckoutCallbackURL?
        if let text = values["callbackUrl"] {
            do {
                callbackURL = try CheckoutCallbackURL(parsing: text)
            } catch {
                errors.add("callbackUrl", "callbackUrl " + error.reason)
            }
        }
        let suppressShippingAddress = Self.boolean("suppressShippingAddress", values, default: false, &errors)
        // locale, channel
        var locale = CheckoutLocale.enUS
        if let text = values["locale"] {
            if let parsed = CheckoutLocale(parsing: text) {
                locale = parsed
            } else {
                errors.add("locale", "locale must look like en_US or fr_FR")
            }
        }
        var channel = CheckoutChannel.web
        if let text = values["channel"] {
            if let parsed = CheckoutChannel(rawValue: text.lowercased()) {
                channel = parsed
            } else {
                errors.add("channel", "channel must be web or mobile")
            }
        }
        // crypto options
        var cryptoOptions: [MasterpassCardType: Set<CheckoutCryptoFormat>] = [:]
        if let json = values["cryptoOptions"] {
            if let parsed = Self.parseCryptoOptionsJSON(json) {
                cryptoOptions = parsed
            } else {
                errors.add(
                    "cryptoOptions",
                    "cryptoOptions must be a JSON array such as "
                        + "[{\"cardType\":\"master\",\"format\":[\"ICC\",\"UCAF\"]}]"
                        + " with formats the card type supports (ICC or UCAF; TAVV or TVV for visa)")
            }
        }
        for type in MasterpassCardType.allCases {
            let name = type.rawValue + "CryptoFormat"
            guard let text = values[name] else { continue }
            if let formats = Self.parseFormats(text.split(separator: ",").map(String.init), for: type) {
                cryptoOptions[type] = formats
            } else {
                let accepted = CheckoutCryptoFormat.accepted(by: type).sorted().map(\.rawValue).joined(separator: ", ")
                errors.add(name, "\(name) must be a comma-separated list of \(accepted)")
            }
        }
        let cvc2Support = Self.boolean("cvc2Support", values, default: true, &errors)
        // suppress3Ds / suppress3DS
        var suppress3DS = false
        let lower = values["suppress3Ds"].map { _ in Self.boolean("suppress3Ds", values, default: false, &errors) }
        let upper = values["suppress3DS"].map { _ in Self.boolean("suppress3DS", values, default: false, &errors) }
        if let lower, let upper, lower != upper {
            errors.add("suppress3DS", "suppress3Ds and suppress3DS disagree; send one of them")
        }
        suppress3DS = lower ?? upper ?? false
        // unpredictableNumber
        var unpredictableNumber: String?
        if let text = values["unpredictableNumber"] {
            if Self.isBase64Alphabet(text, length: 4...44) {
                unpredictableNumber = text
            } else {
                errors.add(
                    "unpredictableNumber",
                    "unpredictableNumber must be 4 to 44 characters of base64 (A-Z, a-z, 0-9, +, /, =)")
            }
        }
        // validityPeriodMinutes
        var validityPeriodMinutes = Self.defaultValidityPeriodMinutes
        if let text = values["validityPeriodMinutes"] {
            if text.utf8.count <= 5, text.utf8.allSatisfy(CheckoutCallbackURL.isDigit), let minutes = Int(text),
                (1...Self.maximumValidityPeriodMinutes).contains(minutes)
            {
                validityPeriodMinutes = minutes
            } else {
                errors.add(
                    "validityPeriodMinutes",
                    "validityPeriodMinutes must be a whole number from 1 to \(Self.maximumValidityPeriodMinutes)")
            }
        }
        // shippingLocationProfile(s)
        var shippingCountries: [String]?
        let shippingName =
            values["shippingLocationProfile"] != nil ? "shippingLocationProfile" : "shippingLocationProfiles"
        if values["shippingLocationProfile"] != nil, values["shippingLocationProfiles"] != nil {
            errors.add("shippingLocationProfile", "send shippingLocationProfile or shippingLocationProfiles, not both")
        } else if let text = values[shippingName] {
            let codes = text.split(separator: ",", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            if !codes.isEmpty, codes.count <= 250, codes.allSatisfy(Self.isCountryCode) {
                shippingCountries = codes
            } else {
                errors.add(
                    shippingName,
                    "\(shippingName) must be a comma-separated list of ISO 3166 country codes such as US,AU,BE")
            }
        }
        // userId
        var userId: String?
        if let text = values["userId"] {
            if Self.isUserId(text) {
                userId = text
            } else {
                errors.add("userId", "userId must be 1 to 100 characters of letters, digits and . _ @ + -")
            }
        }
        try errors.check()

        self.checkoutId = checkoutId
        self.cartId = cartId
        self.amountMinorUnits = amount.minorUnits
        self.currency = amount.currency
        self.allowedCardTypes = allowedCardTypes
        self.callbackURL = callbackURL
        self.suppressShippingAddress = suppressShippingAddress
        self.locale = locale
        self.channel = channel
        self.cryptoOptions = cryptoOptions
        self.cvc2Support = cvc2Support
        self.suppress3DS = suppress3DS
        self.unpredictableNumber = unpredictableNumber
        self.validityPeriodMinutes = validityPeriodMinutes
        self.shippingCountries = shippingCountries
        self.userId = userId
    }

    /// Parses `text` strictly in `currency`; without a usable currency, still reports text that is no number.
    static func amount(_ text: String, currency: Currency?, errors: inout CheckoutFieldErrors) -> Money? {
        if let currency {
            let parsed: Money
            do {
                parsed = try Money(parsing: text, currency: currency)
            } catch {
                errors.add("amount", amountMessage(error, currency: currency))
                return nil
            }
            // Major units with exactly the currency's decimals: `4990` for EUR is refused rather than read as
            // 4990.00 EUR, because the same number in the REST API's minor units means 49.90 EUR.
            let decimals = text.firstIndex(of: ".").map { text.distance(from: $0, to: text.endIndex) - 1 } ?? 0
            if decimals != currency.minorUnits, parsed.minorUnits != 0 {
                errors.add("amount", exponentMessage(text, parsed: parsed, currency: currency))
                return nil
            }
            return parsed
        }
        guard let widest = Currency.all.max(by: { $0.minorUnits < $1.minorUnits }) else { return nil }
        do {
            _ = try Money(parsing: text, currency: widest)
        } catch  where error.code != .tooManyDecimals {
            errors.add("amount", amountMessage(error, currency: widest))
        } catch {}
        return nil
    }

    /// The refusal of a decimal amount without the currency's number of decimals, with both readings of it.
    static func exponentMessage(_ text: String, parsed: Money, currency: Currency) -> String {
        let major = parsed.decimalString
        var message =
            "amount must be written in major units with exactly \(currency.minorUnits) decimals in \(currency.code)"
            + " (such as \(major))"
        if !text.contains("."), let minor = Int64(text) {
            let asMinor = Money(minorUnits: minor, currency: currency).decimalString
            message += ": write \(major) for \(major) \(currency.code), or \(asMinor) if \(text) is in minor units"
        }
        return message
    }

    static func amountMessage(_ error: MoneyError, currency: Currency) -> String {
        switch error.code {
        case .tooManyDecimals:
            return currency.minorUnits == 0
                ? "amount must be a whole number in \(currency.code)"
                : "amount may have at most \(currency.minorUnits) decimals in \(currency.code)"
                    + " (12.55 is valid, 12.456 is not)"
        case .negativeAmount: return "amount must be greater than zero"
        case .overflow: return "amount is too large"
        default: return "amount must be a plain decimal number such as 12.55"
        }
    }

    static func boolean(
        _ name: String, _ values: [String: String], default value: Bool, _ errors: inout CheckoutFieldErrors
    )
        -> Bool
    {
        guard let text = values[name] else { return value }
        switch text.lowercased() {
        case "true": return true
        case "false": return false
        default:
            errors.add(name, "\(name) must be true or false")
            return value
        }
    }

    static func parseFormats(_ names: [String], for type: MasterpassCardType) -> Set<CheckoutCryptoFormat>? {
        var formats = Set<CheckoutCryptoFormat>()
        for name in names {
            guard let format = CheckoutCryptoFormat(rawValue: name.trimmingCharacters(in: .whitespaces).uppercased()),
                CheckoutCryptoFormat.accepted(by: type).contains(format)
            else { return nil }
            formats.insert(format)
        }
        return formats.isEmpty ? nil : formats
    }

    static func parseCryptoOptionsJSON(_ text: String) -> [MasterpassCardType: Set<CheckoutCryptoFormat>]? {
        guard text.utf8.count <= 2048,
            let array = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [Any], !array.isEmpty
        else { return nil }
        var result: [MasterpassCardType: Set<CheckoutCryptoFormat>] = [:]
        for element in array {
            guard let object = element as? [String: Any], let name = object["cardType"] as? String,
                let type = MasterpassCardType(rawValue: name.lowercased()), result[type] == nil
            else { return nil }
            let names: [String]
            if let list = object["format"] as? [String] {
                names = list
            } else if let single = object["format"] as? String {
                names = single.split(separator: ",").map(String.init)
            } else {
                return nil
            }
            guard let formats = parseFormats(names, for: type) else { return nil }
            result[type] = formats
        }
        return result
    }

    static func isPrintableToken(_ text: String, maximum: Int) -> Bool {
        let bytes = text.utf8
        return !bytes.isEmpty && bytes.count <= maximum && bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }

    /// True when `text` may be a merchant's shopper id: 1–100 of A–Z, a–z, 0–9 and `._@+-`.
    public static func isUserId(_ text: String) -> Bool {
        let bytes = text.utf8
        return !bytes.isEmpty && bytes.count <= 100
            && bytes.allSatisfy {
                CheckoutCallbackURL.isAlpha($0) || CheckoutCallbackURL.isDigit($0) || $0 == 0x2E || $0 == 0x5F
                    || $0 == 0x40 || $0 == 0x2B || $0 == 0x2D
            }
    }

    static func isCountryCode(_ text: String) -> Bool {
        text.utf8.count == 2 && text.utf8.allSatisfy { $0 >= 0x41 && $0 <= 0x5A }
    }

    static func isBase64Alphabet(_ text: String, length: ClosedRange<Int>) -> Bool {
        let bytes = Array(text.utf8)
        guard length.contains(bytes.count) else { return false }
        var padding = 0
        for byte in bytes {
            if byte == 0x3D {
                padding += 1
                continue
            }
            guard padding == 0,
                CheckoutCallbackURL.isAlpha(byte) || CheckoutCallbackURL.isDigit(byte) || byte == 0x2B || byte == 0x2F
            else { return false }
        }
        return padding <= 2
    }
}
