import CardKit
import Foundation
public import VaultCore
public import VaultCrypto
public import VaultStore

/// Settings of the hosted checkout.
public struct CheckoutConfiguration: Sendable, Equatable {
    /// The public base URL of the daemon (`https://vault.example`), for page, return and logo URLs.
    public var publicBaseURL: String
    /// How long a shopper has to finish a checkout, in seconds.
    public var sessionLifetimeSeconds: Int
    /// How long a pairing transaction may wait for the merchant's exchange, in seconds.
    public var pairingTransactionLifetimeSeconds: Int
    public var walletName: String
    public var walletId: String

    public init(
        publicBaseURL: String = "http://127.0.0.1:8080", sessionLifetimeSeconds: Int = 1800,
        pairingTransactionLifetimeSeconds: Int = 3600, walletName: String = "CardVault", walletId: String = "cardvault"
    ) {
        self.publicBaseURL = publicBaseURL
        self.sessionLifetimeSeconds = sessionLifetimeSeconds
        self.pairingTransactionLifetimeSeconds = pairingTransactionLifetimeSeconds
        self.walletName = walletName
        self.walletId = walletId
    }
}

/// The hosted checkout and the Masterpass-dialect merchant API, over the record store: checkout registrations,
/// checkout sessions driven by ``CheckoutSessionStateMachine``, payment data with tokens and cryptograms,
/// postbacks, pairing and express checkout, and the audit of payment data reads.
///
/// Card data goes through ``CheckoutCardVault`` (the merchant API's tokenization path) and 3-D Secure through
/// ``CheckoutAuthenticator`` (the pay-in service's validation flow); this type holds neither a card number nor a
/// security code.
public struct CheckoutService: Sendable {
    let store: any RecordStore
    let clock: any WallClock
    let random: any RandomSource
    let logger: Logger
    let configuration: CheckoutConfiguration
    let cryptograms: MasterpassCryptograms
    let vault: any CheckoutCardVault
    let authenticator: any CheckoutAuthenticator
    /// Keyed hashes for the record ids of sessions, transactions, pairings, audit entries and shoppers' wallets
    /// (secrets in the shopper's URL, or the merchant's user ids).
    let recordIds: KeyedRecordIds

    public init(
        store: any RecordStore, clock: any WallClock, random: any RandomSource, logger: Logger = .disabled,
        configuration: CheckoutConfiguration = CheckoutConfiguration(), cryptogramKey: SymmetricKey,
        recordIds: KeyedRecordIds, vault: any CheckoutCardVault, authenticator: any CheckoutAuthenticator
    ) {
        self.recordIds = recordIds
        self.store = store
        self.clock = clock
        self.random = random
        self.logger = logger
        self.configuration = configuration
        self.cryptograms = MasterpassCryptograms(key: cryptogramKey)
        self.vault = vault
        self.authenticator = authenticator
    }

    enum Collection {
        static let registrations = Collections.checkoutRegistrations
        static let merchants = Collections.checkoutMerchants
        static let sessions = Collections.checkoutSessions
        static let transactions = Collections.checkoutTransactions
        static let wallets = Collections.checkoutWallets
        static let pairingTransactions = Collections.checkoutPairingTransactions
        static let pairings = Collections.checkoutPairings
        static let audit = Collections.checkoutAudit
    }

    var nowSeconds: Int64 { Int64(clock.now.timeIntervalSince1970.rounded(.down)) }

    // MARK: - Merchant set-up

    /// Registers a checkout id for `clientId`. A nil `checkoutId` gets a generated 32-character one.
    /// - Throws: ``CheckoutError`` `.invalidRequest` (field by field), `.alreadyExists`.
    /// - Parameters:
    ///   - threeDSPolicy: `merchantChoice` (default: each session the merchant's server starts may set
    ///     `suppress3DS`) or `required` (every checkout of the id runs 3-D Secure).
    ///   - cvcPolicy: `merchantChoice` (default: a session may set `cvc2Support: false`) or `required`.
    public func register(
        clientId: String, checkoutId: String? = nil, callbackPrefixes: [String], allowedCardTypes: [String],
        merchantName: String? = nil, threeDSPolicy: String? = nil, cvcPolicy: String? = nil
    ) async throws -> CheckoutRegistration {
        let policies = try Self.policies(threeDS: threeDSPolicy, cvc: cvcPolicy)
        let (requested, prefixes, types, name) = try CheckoutRegistration.validate(
            checkoutId: checkoutId, callbackPrefixes: callbackPrefixes, allowedCardTypes: allowedCardTypes,
            merchantName: merchantName)
        let id = requested ?? CheckoutIdentifiers.secret(count: 32, random: random)
        let registration = CheckoutRegistration(
            checkoutId: id, clientId: clientId, callbackPrefixes: prefixes, allowedCardTypes: types,
            merchantName: name.isEmpty ? clientId : name, creationDate: nowSeconds, threeDSPolicy: policies.0,
            cvcPolicy: policies.1)
        do {
            try await write(Collection.registrations, id: id, registration, condition: .absent)
        } catch let error as StoreError where error.code == .conflict {
            throw CheckoutError(.alreadyExists, "This checkoutId is registered already")
        }
        logger.info(
            "checkout registered",
            ["clientId": .string(clientId), "checkoutId": .string(id), "prefixes": .int(prefixes.count)])
        return registration
    }

    /// The registration of `checkoutId`, whoever owns it, or nil.
    public func registration(checkoutId: String) async throws -> CheckoutRegistration? {
        guard CheckoutRegistration.isWellFormedCheckoutId(checkoutId) else { return nil }
        return try await read(CheckoutRegistration.self, Collection.registrations, id: checkoutId)?.value
    }

    /// The registration of `checkoutId` when `clientId` owns it.
    /// - Throws: ``CheckoutError`` `.authorizationFailed` otherwise (unknown and foreign look the same).
    public func ownedRegistration(clientId: String, checkoutId: String?) async throws -> CheckoutRegistration {
        guard let checkoutId, let registration = try await registration(checkoutId: checkoutId),
            registration.clientId == clientId
        else { throw CheckoutError.authorizationFailed() }
        return registration
    }

    /// Every registration of `clientId`, by checkout id.
    public func registrations(clientId: String) async throws -> [CheckoutRegistration] {
        try await store.scanAll(Collection.registrations).map { try Self.decode(CheckoutRegistration.self, $0) }
            .filter { $0.clientId == clientId }
    }

    /// Removes a registration of `clientId`.
    public func unregister(clientId: String, checkoutId: String) async throws {
        let registration = try await ownedRegistration(clientId: clientId, checkoutId: checkoutId)
        try await store.delete(Collection.registrations, id: registration.checkoutId)
    }

    /// Flags `clientId` as PCI-compliant (it then receives card numbers in payment data) or not.
    public func setPCICompliant(clientId: String, _ compliant: Bool) async throws {
        try await write(
            Collection.merchants, id: clientId, CheckoutMerchant(clientId: clientId, pciCompliant: compliant))
        logger.notice("checkout PCI flag changed", ["clientId": .string(clientId), "pciCompliant": .bool(compliant)])
    }

    /// The checkout settings of `clientId` (not PCI-compliant unless flagged).
    public func merchant(clientId: String) async throws -> CheckoutMerchant {
        try await read(CheckoutMerchant.self, Collection.merchants, id: clientId)?.value
            ?? CheckoutMerchant(clientId: clientId, pciCompliant: false)
    }

    // MARK: - Hosted checkout

    /// The session behind a page URL, expired first if its time is up; nil when unknown. Writes nothing: a page
    /// view is free for anyone holding the URL, so it must not grow the store (the sweeper ends the session).
    public func session(id: String) async throws -> CheckoutSession? {
        try await loadSession(id)?.value
    }

    /// Handles the posted form of session `sessionId`: validates the fields, vaults the card, runs 3-D Secure
    /// unless suppressed, and answers with the next step.
    /// - Throws: ``CheckoutError`` `.notFound` for an unknown session.
    public func submit(
        sessionId: String, form: CheckoutForm, signals: CheckoutDeviceSignals
    ) async throws
        -> CheckoutStep
    {
        guard let found = try await loadSession(sessionId) else {
            throw CheckoutError.notFound("checkout")
        }
        let loaded = found.value
        let version = found.version
        var session = loaded
        switch session.machine.state {
        case .created, .awaitingAuthentication: break
        case .cardSubmitted, .completed, .cancelled, .expired: return step(for: session)
        }
        var errors = CheckoutFieldErrors()
        let details = validateDetails(form, session: session, errors: &errors)
        var card: VaultedCheckoutCard?
        var holder = details.holder
        if let savedId = form.savedCardId, !savedId.isEmpty {
            if let saved = session.savedCards.first(where: { $0.cardId == savedId }) {
                card = saved.card
                if holder.isEmpty { holder = saved.cardHolderName }
            } else {
                errors.add("savedCardId", "the chosen saved card is not available")
            }
        } else {
            let input = validateCardFields(form, session: session, errors: &errors)
            if let input, errors.isEmpty {
                do {
                    card = try await vault.tokenize(
                        clientId: session.clientId, shopperReference: session.request.userId ?? session.transactionId,
                        currency: session.request.currency, card: input, signals: signals)
                } catch let refusal as CheckoutCardRefusal {
                    switch refusal {
                    case .invalidNumber: errors.add("cardNumber", "the card number is not valid")
                    case .invalidExpiry: errors.add("expiry", "the expiry date is not valid or the card has expired")
                    case .invalidSecurityCode:
                        errors.add("securityCode", "the security code is not valid for this card")
                    case .rateLimited: errors.add("cardNumber", "too many attempts; wait a minute and try again")
                    }
                }
            }
        }
        guard errors.isEmpty, let card else {
            return .form(session, fieldErrors: errors.errors)
        }
        let submission = CheckoutSubmission(
            card: card, cardHolderName: holder.isEmpty ? "" : holder, billingAddress: details.billing,
            shippingAddress: details.shipping, personalInfo: details.personalInfo,
            pairingConsent: form.pairingConsent && session.request.userId != nil)
        session.problem = nil
        let outcome = try apply(.submit(submission, at: clock.now), to: &session)
        var actions = outcome
        if actions.contains(.startAuthentication) {
            let start = try await authenticator.start(
                CheckoutAuthenticationRequest(
                    clientId: session.clientId, cardId: card.cardId, amount: session.request.amount,
                    returnURL: configuration.publicBaseURL + "/srci/" + session.sessionId + "/return",
                    profilingReference: card.profilingReference, signals: signals))
            switch start {
            case .decided(let authenticationId, let result):
                actions = try apply(.authenticated(result, at: clock.now), to: &session)
                try await carryOut(actions, session: &session, authenticationId: authenticationId)
            case .challenge(let authenticationId, let redirectURL, _):
                actions = try apply(
                    .authenticationStarted(authenticationId: authenticationId, at: clock.now), to: &session)
                try await write(
                    Collection.sessions, id: sessionRecordId(sessionId), session, condition: .version(version))
                return actions.contains(.presentChallenge) ? .redirect(redirectURL) : step(for: session)
            }
        } else {
            actions = try apply(.authenticationSkipped(at: clock.now), to: &session)
            try await carryOut(actions, session: &session, authenticationId: nil)
        }
        try await write(Collection.sessions, id: sessionRecordId(sessionId), session, condition: .version(version))
        return step(for: session)
    }

    /// The shopper came back from the challenge page: reads the authentication outcome and moves on.
    public func resume(sessionId: String) async throws -> CheckoutStep {
        guard let found = try await loadSession(sessionId) else {
            throw CheckoutError.notFound("checkout")
        }
        let loaded = found.value
        let version = found.version
        var session = loaded
        guard case .awaitingAuthentication(_, let authenticationId, _) = session.machine.state else {
            return step(for: session)
        }
        guard
            let result = try await authenticator.outcome(clientId: session.clientId, authenticationId: authenticationId)
        else { return .waiting(session) }
        let actions = try apply(.authenticated(result, at: clock.now), to: &session)
        try await carryOut(actions, session: &session, authenticationId: authenticationId)
        try await write(Collection.sessions, id: sessionRecordId(sessionId), session, condition: .version(version))
        return step(for: session)
    }

    /// The shopper cancelled: redirects to the callback with `mpstatus=cancel` (again, if repeated).
    public func cancel(sessionId: String) async throws -> CheckoutStep {
        guard let found = try await loadSession(sessionId) else {
            throw CheckoutError.notFound("checkout")
        }
        let loaded = found.value
        let version = found.version
        var session = loaded
        let actions = try apply(.cancel(at: clock.now), to: &session)
        if actions.contains(.persist) {
            try await write(Collection.sessions, id: sessionRecordId(sessionId), session, condition: .version(version))
            logger.info("checkout cancelled", ["transactionId": .string(session.transactionId)])
        }
        return step(for: session)
    }

    /// What the page shows for a session in its current state.
    public func step(for session: CheckoutSession) -> CheckoutStep {
        switch session.machine.state {
        case .created, .cardSubmitted: return .form(session, fieldErrors: [])
        case .awaitingAuthentication: return .waiting(session)
        case .completed: return .redirect(successRedirect(session))
        case .cancelled: return .redirect(cancelRedirect(session))
        case .expired: return .expired(session)
        }
    }

    func successRedirect(_ session: CheckoutSession) -> String {
        var items = [
            ("oauth_token", session.transactionId), ("oauth_verifier", session.transactionId),
            ("checkoutId", session.request.checkoutId), ("mpstatus", "success"),
        ]
        if let pairing = session.pairingTransactionId { items.append(("pairing_verifier", pairing)) }
        return session.callback.appending(items)
    }

    func cancelRedirect(_ session: CheckoutSession) -> String {
        session.callback.appending([
            ("oauth_token", session.transactionId), ("checkoutId", session.request.checkoutId), ("mpstatus", "cancel"),
        ])
    }

    /// Applies an event, mapping an illegal one to `.invalidState`.
    func apply(
        _ event: CheckoutSessionStateMachine.Event, to session: inout CheckoutSession
    ) throws
        -> [CheckoutSessionStateMachine.Action]
    {
        do {
            switch try session.machine.handle(event) {
            case .transitioned(let actions): return actions
            case .unchanged, .alreadyFinal: return []
            }
        } catch {
            throw CheckoutError(.invalidState, "The checkout cannot do this now")
        }
    }

    /// Carries out the actions that need data (payment data, pairing, problems); `.persist` is the caller's.
    func carryOut(
        _ actions: [CheckoutSessionStateMachine.Action], session: inout CheckoutSession, authenticationId: String?
    ) async throws {
        for action in actions {
            switch action {
            case .issuePaymentData:
                guard case .completed(let submission, let authentication) = session.machine.state else { continue }
                session.payment = issuePayment(
                    session: session, submission: submission, authentication: authentication,
                    authenticationId: authenticationId, pairingId: nil)
                logger.info(
                    "checkout completed",
                    [
                        "transactionId": .string(session.transactionId), "brand": .string(submission.card.brand.id),
                        "card": .redacted(submission.card.alias),
                        "authenticated": .bool(authentication?.status.allowsCompletion ?? false),
                    ])
            case .createPairing:
                guard case .completed(let submission, _) = session.machine.state, let userId = session.request.userId
                else { continue }
                session.pairingTransactionId = try await createPairingTransaction(
                    clientId: session.clientId, userId: userId, transactionId: session.transactionId,
                    submission: submission)
            case .showError(let problem):
                session.problem = problem
            case .persist, .startAuthentication, .presentChallenge, .redirectSuccess, .redirectCancel, .showExpired:
                continue
            }
        }
    }

    /// Builds the payment data of a completed checkout: the network-style token, the cryptogram of the accepted
    /// format, the ECI of the brand and authentication, the unpredictable number and the validity.
    func issuePayment(
        session: CheckoutSession, submission: CheckoutSubmission, authentication: CheckoutAuthenticationOutcome?,
        authenticationId: String?, pairingId: String?
    ) -> CheckoutIssuedPayment {
        let card = submission.card
        let type = MasterpassCardType(brand: card.brand) ?? .master
        let token = cryptograms.networkToken(
            clientId: session.clientId, cardId: card.cardId, bin: card.bin, length: card.alias.utf8.count,
            cardLastFour: card.lastFour)
        let eci = MasterpassECI.value(for: type, status: authentication?.status)
        let unpredictable =
            session.request.unpredictableNumber ?? MasterpassCryptograms.unpredictableNumber(random: random)
        let expiresAt = nowSeconds + Int64(session.request.validityPeriodMinutes) * 60
        let cryptoType = session.request.cryptoType(for: type)
        let fields = MasterpassCryptogramFields(
            transactionId: session.transactionId, accountNumber: token, amount: session.request.amount,
            unpredictableNumber: unpredictable, cryptoType: cryptoType, eci: eci, expiresAt: expiresAt)
        let options: MasterpassAuthenticationOptions
        if let authentication, let authenticationId {
            options = MasterpassAuthenticationOptions(
                authenticateMethod: "3DS", cardEnrollmentMethod: "Manual",
                cAvv: cryptograms.authenticationValue(
                    transactionId: session.transactionId, authenticationId: authenticationId),
                eciFlag: eci, paResStatus: authentication.status.rawValue, scEnrollmentStatus: "Y",
                signatureVerification: "Y", xid: authenticationId)
        } else {
            options = MasterpassAuthenticationOptions(
                authenticateMethod: "NO AUTHENTICATION", cardEnrollmentMethod: "Manual", cAvv: nil, eciFlag: eci,
                paResStatus: nil, scEnrollmentStatus: "U", signatureVerification: nil, xid: nil)
        }
        let data = MasterpassPaymentData(
            card: MasterpassCard(
                brandId: type.rawValue, brandName: type.brandName, accountNumber: token,
                cardHolderName: submission.cardHolderName, expiryMonth: card.expiryMonth, expiryYear: card.expiryYear,
                billingAddress: submission.billingAddress),
            shippingAddress: session.request.suppressShippingAddress ? nil : submission.shippingAddress,
            personalInfo: submission.personalInfo, walletId: configuration.walletId,
            walletName: configuration.walletName, authenticationOptions: options,
            tokenization: MasterpassTokenization(
                cryptogram: MasterpassCryptogramData(
                    cryptoValue: cryptograms.cryptogram(for: fields), cryptoType: cryptoType.rawValue, eci: eci,
                    unpredictableNumber: unpredictable, expiresAt: expiresAt),
                paymentAccountReference: cryptograms.paymentAccountReference(
                    clientId: session.clientId, cardId: card.cardId),
                fPanSuffix: card.lastFour, tokenRequestorId: "50123456789"),
            pairingId: pairingId, transactionId: session.transactionId)
        return CheckoutIssuedPayment(data: data, cardId: card.cardId, expiresAt: expiresAt, postback: nil)
    }

    /// Checks the non-card fields of the form; returns what it could read.
    func validateDetails(
        _ form: CheckoutForm, session: CheckoutSession, errors: inout CheckoutFieldErrors
    )
        -> (
            holder: String, billing: MasterpassAddress?, shipping: MasterpassAddress?,
            personalInfo: MasterpassPersonalInfo?
        )
    {
        let holder = (form.cardHolderName ?? "").trimmingCharacters(in: .whitespaces)
        if form.savedCardId == nil || form.savedCardId == "" {
            if holder.isEmpty {
                errors.add("cardHolderName", "enter the name printed on the card")
            } else if !Self.isPlainText(holder, maximum: 100) {
                errors.add("cardHolderName", "the cardholder name must be at most 100 characters")
            }
        }
        let billing =
            form.billing.isEmpty ? nil : address(form.billing, prefix: "billing", session: nil, errors: &errors)
        var shipping: MasterpassAddress?
        if !session.request.suppressShippingAddress {
            if form.shippingSameAsBilling, let billing {
                shipping = billing
                if let countries = session.request.shippingCountries, !countries.contains(billing.country) {
                    errors.add("billingCountry", "the merchant does not ship to this country")
                }
            } else {
                shipping = address(form.shipping, prefix: "shipping", session: session, errors: &errors)
            }
        }
        var info: MasterpassPersonalInfo?
        let email = (form.email ?? "").trimmingCharacters(in: .whitespaces)
        let phone = (form.phone ?? "").trimmingCharacters(in: .whitespaces)
        if !email.isEmpty, !Self.isEmail(email) {
            errors.add("email", "enter an e-mail address such as name@example.com")
        }
        if !phone.isEmpty, !Self.isPhone(phone) { errors.add("phone", "enter a phone number of 6 to 20 digits") }
        if !holder.isEmpty || !email.isEmpty || !phone.isEmpty {
            info = MasterpassPersonalInfo(
                recipientName: holder, recipientPhone: phone.isEmpty ? nil : phone,
                recipientEmailAddress: email.isEmpty ? nil : email)
        }
        return (holder, billing, shipping, info)
    }

    func address(
        _ form: CheckoutAddressForm, prefix: String, session: CheckoutSession?, errors: inout CheckoutFieldErrors
    ) -> MasterpassAddress? {
        func field(_ value: String?, _ name: String, required: Bool, maximum: Int, label: String) -> String {
            let text = (value ?? "").trimmingCharacters(in: .whitespaces)
            if text.isEmpty {
                if required { errors.add(prefix + name, "enter the \(label)") }
            } else if !Self.isPlainText(text, maximum: maximum) {
                errors.add(prefix + name, "the \(label) must be at most \(maximum) characters")
            }
            return text
        }
        let line1 = field(form.line1, "Line1", required: true, maximum: 100, label: "street address")
        let line2 = field(form.line2, "Line2", required: false, maximum: 100, label: "second address line")
        let city = field(form.city, "City", required: true, maximum: 60, label: "city")
        let postal = field(form.postalCode, "PostalCode", required: true, maximum: 16, label: "postal code")
        let subdivision = field(form.subdivision, "Subdivision", required: false, maximum: 10, label: "region")
        let country = (form.country ?? "").trimmingCharacters(in: .whitespaces).uppercased()
        if !CheckoutRequest.isCountryCode(country) {
            errors.add(prefix + "Country", "choose a country (two-letter ISO code)")
        } else if let countries = session?.request.shippingCountries, !countries.contains(country) {
            errors.add(prefix + "Country", "the merchant does not ship to this country")
        }
        return MasterpassAddress(
            line1: line1, line2: line2.isEmpty ? nil : line2, city: city,
            subdivision: subdivision.isEmpty ? nil : subdivision, postalCode: postal, country: country)
    }

    /// Checks presence, shape and brand of the typed card before it goes to the vault.
    func validateCardFields(
        _ form: CheckoutForm, session: CheckoutSession, errors: inout CheckoutFieldErrors
    )
        -> CheckoutCardInput?
    {
        var digits = ""
        let typed = form.cardNumber?.unsafeRevealed ?? ""
        for scalar in typed.unicodeScalars where scalar != " " && scalar != "-" { digits.unicodeScalars.append(scalar) }
        if digits.isEmpty {
            errors.add("cardNumber", "enter the card number")
        } else if !digits.utf8.allSatisfy(CheckoutCallbackURL.isDigit) || digits.utf8.count < 12
            || digits.utf8.count > 19
        {
            errors.add("cardNumber", "the card number must be 12 to 19 digits")
        } else if let brand = BrandCatalog.standard.brand(forDigits: digits) {
            if let type = MasterpassCardType(brand: brand), session.allowedCardTypes.contains(type) {
                if !Luhn.isValid(digits) || !brand.acceptsLength(digits.utf8.count) {
                    errors.add("cardNumber", "the card number is not valid")
                }
            } else {
                errors.add("cardNumber", "\(brand.displayName) cards are not accepted here")
            }
        } else {
            errors.add("cardNumber", "the card number is not valid")
        }
        let expiry = (form.expiry ?? "").replacingOccurrences(of: " ", with: "")
        if expiry.isEmpty {
            errors.add("expiry", "enter the expiry date (MM/YY)")
        } else if let parsed = try? CardExpiry(parsing: expiry) {
            if !parsed.isValid(at: clock.now) {
                errors.add("expiry", "the card has expired or the date is too far ahead")
            }
        } else {
            errors.add("expiry", "enter the expiry date as MM/YY")
        }
        let code = form.securityCode?.unsafeRevealed ?? ""
        if session.request.cvc2Support {
            if code.isEmpty {
                errors.add("securityCode", "enter the security code")
            } else if let brand = BrandCatalog.standard.brand(forDigits: digits),
                !SecurityCode.isValid(code, for: brand)
            {
                errors.add("securityCode", "the security code must be \(brand.securityCode.size) digits")
            }
        }
        return CheckoutCardInput(
            number: Redacted(digits), expiry: expiry,
            securityCode: Redacted(session.request.cvc2Support ? code : ""),
            cardHolderName: (form.cardHolderName ?? "").trimmingCharacters(in: .whitespaces))
    }

    func loadSession(_ id: String) async throws -> Stored<CheckoutSession>? {
        guard CheckoutIdentifiers.isSecret(id),
            var stored = try await read(CheckoutSession.self, Collection.sessions, id: sessionRecordId(id))
        else { return nil }
        // Expired in memory only; a later write (a submit, a cancel) refuses to act on an expired session anyway.
        _ = try? stored.value.machine.handle(.expire(now: clock.now))
        return stored
    }

    // MARK: - Store helpers

    /// The record id of a client's secret or personal id (a transaction, pairing or pairing transaction id, a
    /// merchant's user id): `clientId:` + its keyed hash.
    func scoped(_ clientId: String, _ id: String) -> String { recordIds.scoped(clientId, id) }

    /// The record id of a checkout session (its id is the secret in the shopper's URL; sessions are found without
    /// knowing the client).
    func sessionRecordId(_ sessionId: String) -> String { recordIds.hashed(sessionId, scope: Self.sessionScope) }

    static let sessionScope = "checkout-session"

    static func encode(_ value: some Encodable) throws -> [UInt8] { try RecordCoding.encode(value) }

    static func decode<T: Decodable>(_ type: T.Type, _ record: Record) throws -> T {
        try RecordCoding.decode(type, from: record)
    }

    func read<T: Decodable>(_ type: T.Type, _ collection: String, id: String) async throws -> Stored<T>? {
        try await store.read(type, collection, id: id)
    }

    func write(
        _ collection: String, id: String, _ value: some Encodable, condition: WriteCondition = .unconditional
    )
        async throws
    {
        do {
            try await store.put(collection, id: id, value: try Self.encode(value), condition: condition)
        } catch let error as StoreError where error.code == .unavailable {
            throw CheckoutError(.unavailable, "The service cannot store data right now; retry later")
        } catch let error as StoreError where error.code == .conflict && condition != .absent {
            throw CheckoutError(.invalidState, "The checkout changed meanwhile; reload and try again")
        }
    }

    static func isPlainText(_ text: String, maximum: Int) -> Bool {
        text.count <= maximum
            && !text.unicodeScalars.contains { $0.value < 0x20 || ($0.value >= 0x7F && $0.value < 0xA0) }
    }

    static func isEmail(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        return text.utf8.count <= 254 && parts.count == 2 && !parts[0].isEmpty && parts[1].contains(".")
            && !parts[1].hasPrefix(".") && !parts[1].hasSuffix(".") && !text.contains(" ")
            && isPlainText(text, maximum: 254)
    }

    static func isPhone(_ text: String) -> Bool {
        var digits = 0
        for byte in text.utf8 {
            if CheckoutCallbackURL.isDigit(byte) {
                digits += 1
            } else if byte != 0x20 && byte != 0x2B && byte != 0x2D && byte != 0x28 && byte != 0x29 && byte != 0x2E {
                return false
            }
        }
        return (6...20).contains(digits)
    }
}
