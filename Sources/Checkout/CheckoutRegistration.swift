public import CardKit

/// A checkout id a merchant (client) registered: the callback URL prefixes its checkouts may return to and the
/// card types it accepts. A checkout request must name a registered checkout id, a callback inside one of its
/// prefixes and card types inside its allowed set.
public struct CheckoutRegistration: Sendable, Equatable, Codable {
    /// 32 alphanumeric characters when generated (Masterpass's shape); 8–64 when the merchant chose it.
    public var checkoutId: String
    /// The owning client.
    public var clientId: String
    /// Where checkouts may return to. Never empty.
    public var callbackPrefixes: [CheckoutCallbackPrefix]
    /// The card types this checkout id may ever accept; each request narrows it further.
    public var allowedCardTypes: Set<MasterpassCardType>
    /// Shown on the hosted page (`Fancy Shop`), at most 100 characters.
    public var merchantName: String
    /// Unix seconds.
    public var creationDate: Int64
    /// Whether the checkouts of this id always run 3-D Secure, or each session the merchant's server starts says
    /// (nil, as in records written before the policy existed, means `merchantChoice`).
    public var threeDSPolicy: CheckoutPolicy?
    /// Whether the checkouts of this id always ask for the card security code (nil means `merchantChoice`).
    public var cvcPolicy: CheckoutPolicy?
    /// The billing address fields its page asks for (nil, as in records written before the setting, means `full`).
    public var addressFields: CheckoutAddressFields?

    public init(
        checkoutId: String, clientId: String, callbackPrefixes: [CheckoutCallbackPrefix],
        allowedCardTypes: Set<MasterpassCardType>, merchantName: String, creationDate: Int64,
        threeDSPolicy: CheckoutPolicy = .merchantChoice, cvcPolicy: CheckoutPolicy = .merchantChoice,
        addressFields: CheckoutAddressFields = .full
    ) {
        self.addressFields = addressFields
        self.checkoutId = checkoutId
        self.clientId = clientId
        self.callbackPrefixes = callbackPrefixes
        self.allowedCardTypes = allowedCardTypes
        self.merchantName = merchantName
        self.creationDate = creationDate
        self.threeDSPolicy = threeDSPolicy
        self.cvcPolicy = cvcPolicy
    }

    /// May a checkout of this id skip 3-D Secure (`suppress3DS`)?
    public var allowsSuppressing3DS: Bool { (threeDSPolicy ?? .merchantChoice) == .merchantChoice }
    /// May a checkout of this id skip the security code (`cvc2Support: false`)?
    public var allowsSkippingSecurityCode: Bool { (cvcPolicy ?? .merchantChoice) == .merchantChoice }

    /// True when `url` lies inside one of the registered prefixes.
    public func allowsCallback(_ url: CheckoutCallbackURL) -> Bool {
        callbackPrefixes.contains { $0.allows(url) }
    }

    /// The callback used when a request names none: the first prefix, when it is a complete URL.
    public var defaultCallback: CheckoutCallbackURL { callbackPrefixes[0].url }

    /// True when `id` may be a checkout id: 8–64 characters of A–Z, a–z and 0–9.
    public static func isWellFormedCheckoutId(_ id: String) -> Bool {
        let bytes = id.utf8
        return (8...64).contains(bytes.count)
            && bytes.allSatisfy { CheckoutCallbackURL.isAlpha($0) || CheckoutCallbackURL.isDigit($0) }
    }

    /// Validates the parts of a registration as a merchant sends them.
    /// - Throws: ``CheckoutError`` `.invalidRequest` naming each bad field.
    static func validate(
        checkoutId: String?, callbackPrefixes: [String], allowedCardTypes: [String], merchantName: String?
    ) throws(CheckoutError) -> (String?, [CheckoutCallbackPrefix], Set<MasterpassCardType>, String) {
        var errors = CheckoutFieldErrors()
        if let checkoutId, !isWellFormedCheckoutId(checkoutId) {
            errors.add("checkoutId", "checkoutId must be 8 to 64 letters and digits")
        }
        var prefixes: [CheckoutCallbackPrefix] = []
        if callbackPrefixes.isEmpty {
            errors.add("callbackUrlPrefixes", "at least one callback URL prefix is required")
        } else if callbackPrefixes.count > 20 {
            errors.add("callbackUrlPrefixes", "at most 20 callback URL prefixes may be registered")
        }
        for (index, text) in callbackPrefixes.prefix(20).enumerated() {
            do {
                prefixes.append(try CheckoutCallbackPrefix(parsing: text))
            } catch {
                errors.add("callbackUrlPrefixes[\(index)]", "callback URL prefix " + error.reason)
            }
        }
        var types = Set<MasterpassCardType>()
        if allowedCardTypes.isEmpty {
            errors.add("allowedCardTypes", "at least one card type is required")
        } else if let parsed = MasterpassCardType.parseList(allowedCardTypes) {
            types = parsed
        } else {
            errors.add("allowedCardTypes", "allowedCardTypes must list only " + CheckoutRequest.cardTypeNames)
        }
        let name = merchantName ?? ""
        if name.count > 100 || name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            errors.add("merchantName", "merchantName must be at most 100 characters without control characters")
        }
        try errors.check()
        return (checkoutId, prefixes, types, name)
    }
}

/// A checkout id's rule for 3-D Secure or for the security code, set when the merchant registers it. Either
/// way the choice is made on the server, never by the shopper's URL.
public enum CheckoutPolicy: String, Sendable, Codable, CaseIterable {
    /// Every checkout of the id runs it; a session that asks to skip it is refused.
    case required
    /// Each checkout session the merchant's server starts says whether it runs (`suppress3DS`, `cvc2Support`);
    /// the default.
    case merchantChoice

    /// Parses `required` or `merchantChoice`; nil for anything else.
    public init?(parsing text: String) { self.init(rawValue: text) }
}

/// Checkout settings that belong to a client rather than a checkout id.
public struct CheckoutMerchant: Sendable, Equatable, Codable {
    public var clientId: String
    /// A client that passed PCI DSS assessment receives the card number itself in payment data; every other
    /// client receives a CardVault token in network-token style instead.
    public var pciCompliant: Bool

    public init(clientId: String, pciCompliant: Bool) {
        self.clientId = clientId
        self.pciCompliant = pciCompliant
    }
}
