import CardKit
import Foundation
import VaultCore
import VaultCrypto
import VaultStore

/// What a merchant's server sends to start a hosted checkout (`POST /masterpass/checkouts/{checkoutId}/sessions`).
/// Every value that decides what the shopper pays, who the card is saved for and how it is checked comes from
/// here, never from the shopper's URL.
public struct CheckoutSessionInput: Sendable, Equatable {
    public var cartId: String?
    /// The amount in minor units of `currency` (`7490` for 74.90 USD).
    public var amountMinorUnits: Int64?
    public var currency: String?
    /// The merchant's shopper id: the card may be saved for this user when the shopper agrees and the merchant
    /// redeems the pairing.
    public var userId: String?
    /// Narrows the checkout id's card types; nil offers all of them.
    public var allowedCardTypes: [String]?
    /// Skip 3-D Secure (default false); refused when the checkout id's `threeDSPolicy` is `required`.
    public var suppress3DS: Bool?
    /// Ask for the security code (default true); false is refused when the id's `cvcPolicy` is `required`.
    public var cvc2Support: Bool?
    public var callbackURL: String?
    public var suppressShippingAddress: Bool?
    /// `US,FR`: countries the merchant ships to.
    public var shippingLocationProfile: String?
    public var locale: String?
    public var channel: String?
    /// A current pairing id of `userId`: the page offers that wallet's saved cards.
    public var pairingId: String?
    /// The crypto options as the URL spelled them (`[{"cardType":"master","format":["ICC","UCAF"]}]`).
    public var cryptoOptions: String?
    public var unpredictableNumber: String?
    public var validityPeriodMinutes: String?

    public init(
        cartId: String? = nil, amountMinorUnits: Int64? = nil, currency: String? = nil, userId: String? = nil,
        allowedCardTypes: [String]? = nil, suppress3DS: Bool? = nil, cvc2Support: Bool? = nil,
        callbackURL: String? = nil, suppressShippingAddress: Bool? = nil, shippingLocationProfile: String? = nil,
        locale: String? = nil, channel: String? = nil, pairingId: String? = nil, cryptoOptions: String? = nil,
        unpredictableNumber: String? = nil, validityPeriodMinutes: String? = nil
    ) {
        self.cartId = cartId
        self.amountMinorUnits = amountMinorUnits
        self.currency = currency
        self.userId = userId
        self.allowedCardTypes = allowedCardTypes
        self.suppress3DS = suppress3DS
        self.cvc2Support = cvc2Support
        self.callbackURL = callbackURL
        self.suppressShippingAddress = suppressShippingAddress
        self.shippingLocationProfile = shippingLocationProfile
        self.locale = locale
        self.channel = channel
        self.pairingId = pairingId
        self.cryptoOptions = cryptoOptions
        self.unpredictableNumber = unpredictableNumber
        self.validityPeriodMinutes = validityPeriodMinutes
    }
}

/// A checkout session the merchant started: where to send the shopper, and the ids it will see again.
public struct StartedCheckout: Sendable, Equatable {
    public var session: CheckoutSession
    /// The page the shopper opens (`https://vault.example/srci/?checkoutId=…&checkoutSessionId=…&cartId=…`).
    public var url: String
}

extension CheckoutService {
    /// The query parameters a checkout URL may carry: what names the checkout, and what only changes how the page
    /// looks. Everything else a Masterpass checkout URL used to carry (amount, currency, userId, suppress3DS,
    /// cvc2Support, card types, callback, ...) is set by the merchant's server when it starts the session.
    public static let harmlessURLParameters: Set<String> = [
        "checkoutId", "checkoutSessionId", "cartId", "locale", "channel",
    ]

    /// Parameters a checkout URL may not carry: the merchant's server sets them.
    public static let merchantOnlyURLParameters: Set<String> = CheckoutRequest.knownNames
        .union(["pairingId", "amountMinorUnits"]).subtracting(harmlessURLParameters)

    /// Starts a hosted checkout for `clientId`'s checkout id: validates every value against the registration
    /// (card types, callback prefixes, the 3-D Secure and security code policies) and stores the session, whose
    /// page URL the merchant hands to the shopper.
    /// - Throws: ``CheckoutError`` `.invalidRequest` (field by field), `.authorizationFailed` (not this client's
    ///   checkout id), `.callbackNotRegistered`.
    public func startSession(
        clientId: String, checkoutId: String, _ input: CheckoutSessionInput
    ) async throws
        -> StartedCheckout
    {
        let registration = try await ownedRegistration(clientId: clientId, checkoutId: checkoutId)
        var errors = CheckoutFieldErrors()
        var items: [(String, String)] = [("checkoutId", registration.checkoutId)]
        if let cartId = input.cartId { items.append(("cartId", cartId)) }
        if let currency = input.currency { items.append(("currency", currency)) }
        if let minor = input.amountMinorUnits {
            // Through the checkout request's own amount rules (greater than zero, within range).
            let currency = input.currency.flatMap { Currency(code: $0) } ?? .usd
            items.append(("amount", Money(minorUnits: minor, currency: currency).decimalString))
        }
        let types = input.allowedCardTypes ?? registration.allowedCardTypes.map(\.rawValue).sorted()
        items.append(("allowedCardTypes", types.joined(separator: ",")))
        if let url = input.callbackURL { items.append(("callbackUrl", url)) }
        if let value = input.suppressShippingAddress { items.append(("suppressShippingAddress", String(value))) }
        if let value = input.shippingLocationProfile { items.append(("shippingLocationProfile", value)) }
        if let value = input.locale { items.append(("locale", value)) }
        if let value = input.channel { items.append(("channel", value)) }
        if let value = input.cryptoOptions { items.append(("cryptoOptions", value)) }
        if let value = input.unpredictableNumber { items.append(("unpredictableNumber", value)) }
        if let value = input.validityPeriodMinutes { items.append(("validityPeriodMinutes", value)) }
        if let value = input.userId { items.append(("userId", value)) }
        items.append(("cvc2Support", String(input.cvc2Support ?? true)))
        items.append(("suppress3DS", String(input.suppress3DS ?? false)))
        if input.suppress3DS == true, !registration.allowsSuppressing3DS {
            errors.add(
                "suppress3DS",
                "this checkoutId requires 3-D Secure (threeDSPolicy required): a session cannot skip it")
        }
        if input.cvc2Support == false, !registration.allowsSkippingSecurityCode {
            errors.add(
                "cvc2Support",
                "this checkoutId requires the security code (cvcPolicy required): a session cannot skip it")
        }
        if let pairingId = input.pairingId {
            if input.userId == nil { errors.add("pairingId", "pairingId needs the userId it belongs to") }
            if !CheckoutIdentifiers.isWellFormed(pairingId) {
                errors.add("pairingId", "pairingId must be 1 to 100 letters, digits, '_' or '-'")
            }
        }
        var request: CheckoutRequest?
        do {
            request = try CheckoutRequest(queryItems: items)
        } catch {
            for field in error.fieldErrors { errors.add(field.field, field.message) }
        }
        try errors.check()
        guard let request else { throw CheckoutError.invalid("amount", "amount is required") }
        let callback = try checkCallbackAndTypes(request, registration: registration)
        var savedCards: [CheckoutSavedCard] = []
        if let userId = request.userId, let pairingId = input.pairingId,
            let wallet = try await wallet(clientId: registration.clientId, userId: userId),
            let current = wallet.pairingId, ConstantTime.equals(Array(current.utf8), Array(pairingId.utf8))
        {
            savedCards = wallet.cards.filter {
                MasterpassCardType(brand: $0.card.brand).map(request.allowedCardTypes.contains) ?? false
            }
        }
        let now = clock.now
        let session = CheckoutSession(
            sessionId: CheckoutIdentifiers.secret(count: 32, random: random),
            transactionId: CheckoutIdentifiers.make("mptx", random: random),
            clientId: registration.clientId, request: request, callback: callback,
            merchantName: registration.merchantName,
            machine: CheckoutSessionStateMachine(
                expiresAt: now.addingTimeInterval(TimeInterval(configuration.sessionLifetimeSeconds)),
                suppress3DS: request.suppress3DS, pairingPossible: request.userId != nil),
            createdAt: nowSeconds, savedCards: savedCards, pairingTransactionId: nil, payment: nil, problem: nil,
            express: false)
        do {
            try await store.commit([
                .put(
                    collection: Collection.sessions, id: sessionRecordId(session.sessionId),
                    value: try Self.encode(session),
                    condition: .absent),
                .put(
                    collection: Collection.transactions, id: scoped(session.clientId, session.transactionId),
                    value: Array(session.sessionId.utf8), condition: .absent),
            ])
        } catch let error as StoreError where error.code == .unavailable {
            throw CheckoutError(.unavailable, "The service cannot store data right now; retry later")
        }
        logger.info(
            "checkout started",
            [
                "clientId": .string(session.clientId), "checkoutId": .string(request.checkoutId),
                "transactionId": .string(session.transactionId), "suppress3DS": .bool(request.suppress3DS),
                "cvc2Support": .bool(request.cvc2Support),
            ])
        return StartedCheckout(session: session, url: pageURL(session))
    }

    /// The URL the merchant sends the shopper to: the checkout id, the session and the cart (Masterpass style).
    func pageURL(_ session: CheckoutSession) -> String {
        var components = URLComponents()
        components.queryItems = [
            URLQueryItem(name: "checkoutId", value: session.request.checkoutId),
            URLQueryItem(name: "checkoutSessionId", value: session.sessionId),
            URLQueryItem(name: "cartId", value: session.request.cartId),
            URLQueryItem(name: "locale", value: session.request.locale.rawValue),
        ]
        let query = (components.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
        return configuration.publicBaseURL + "/srci/?" + query
    }

    /// Checks the request's callback and card types against the registration; returns the callback to use.
    func checkCallbackAndTypes(
        _ request: CheckoutRequest, registration: CheckoutRegistration
    ) throws
        -> CheckoutCallbackURL
    {
        let callback = request.callbackURL ?? registration.defaultCallback
        guard registration.allowsCallback(callback) else {
            logger.warning(
                "checkout refused: callback not registered",
                ["checkoutId": .string(registration.checkoutId), "callbackHost": .string(callback.host)])
            throw CheckoutError(
                .callbackNotRegistered, "The callbackUrl is not registered for this checkoutId",
                fieldErrors: [
                    CheckoutFieldError(
                        field: "callbackUrl",
                        message: "callbackUrl does not start with a URL registered for this checkoutId")
                ])
        }
        let refused = request.allowedCardTypes.subtracting(registration.allowedCardTypes)
        guard refused.isEmpty else {
            let names = refused.map(\.rawValue).sorted().joined(separator: ", ")
            throw CheckoutError.invalid(
                "allowedCardTypes", "allowedCardTypes names types this checkoutId does not accept: \(names)")
        }
        return callback
    }

    /// Finds the session a checkout URL names (`/srci/?checkoutId=…&checkoutSessionId=…&cartId=…&locale=…`).
    /// Writes nothing. The URL may carry only ``harmlessURLParameters``; one that tries to set what the merchant
    /// set (an amount, a user, `suppress3DS`, ...) is refused, and so is a cartId or checkoutId that is not the
    /// session's.
    /// - Throws: ``CheckoutError`` `.invalidRequest` (field by field), `.notFound` (no such session).
    public func open(queryItems: [(String, String)]) async throws -> CheckoutSession {
        var errors = CheckoutFieldErrors()
        var values: [String: String] = [:]
        var refused: [String] = []
        for (name, value) in queryItems {
            if Self.merchantOnlyURLParameters.contains(name) {
                if !refused.contains(name) { refused.append(name) }
            } else if Self.harmlessURLParameters.contains(name) {
                if values[name] != nil {
                    errors.add(name, "\(name) must be given only once")
                } else {
                    values[name] = value
                }
            }
        }
        for name in refused {
            errors.add(
                name,
                "\(name) cannot be set in the checkout URL: the merchant sets it when it starts the checkout from its "
                    + "server; this URL was changed")
        }
        let sessionId = values["checkoutSessionId"] ?? ""
        if sessionId.isEmpty {
            errors.add(
                "checkoutSessionId",
                "checkoutSessionId is required: the merchant starts each checkout from its server "
                    + "(POST /masterpass/checkouts/{checkoutId}/sessions) and sends the shopper to the URL it gets back"
            )
        } else if !CheckoutIdentifiers.isSecret(sessionId) {
            errors.add("checkoutSessionId", "checkoutSessionId is not a valid checkout session")
        }
        if let locale = values["locale"], CheckoutLocale(parsing: locale) == nil {
            errors.add("locale", "locale must look like en_US or fr_FR")
        }
        try errors.check()
        guard let session = try await session(id: sessionId) else { throw CheckoutError.notFound("checkout") }
        if let checkoutId = values["checkoutId"], checkoutId != session.request.checkoutId {
            errors.add("checkoutId", "checkoutId is not the checkout this session belongs to; this URL was changed")
        }
        if let cartId = values["cartId"], cartId != session.request.cartId {
            errors.add("cartId", "cartId is not the cart the merchant started this checkout for; this URL was changed")
        }
        try errors.check()
        return session
    }

    /// Parses the two policies of a registration; nil means `merchantChoice`.
    static func policies(threeDS: String?, cvc: String?) throws(CheckoutError) -> (CheckoutPolicy, CheckoutPolicy) {
        var errors = CheckoutFieldErrors()
        func parse(_ text: String?, _ field: String) -> CheckoutPolicy {
            guard let text else { return .merchantChoice }
            guard let policy = CheckoutPolicy(parsing: text) else {
                errors.add(field, "\(field) must be required or merchantChoice")
                return .merchantChoice
            }
            return policy
        }
        let threeDSPolicy = parse(threeDS, "threeDSPolicy")
        let cvcPolicy = parse(cvc, "cvcPolicy")
        try errors.check()
        return (threeDSPolicy, cvcPolicy)
    }
}
