import CardKit
import Foundation
public import VaultCore
public import VaultCrypto
import VaultStore

/// The form fields the browser posts to the tokenization URL.
public struct TokenizationForm: Sendable {
    public var data: String?
    public var accessKeyRef: String?
    public var cardNumber: String?
    public var cardExpirationDate: String?
    public var cardCvx: String?

    public init(
        data: String?, accessKeyRef: String?, cardNumber: String?, cardExpirationDate: String?, cardCvx: String?
    ) {
        self.data = data
        self.accessKeyRef = accessKeyRef
        self.cardNumber = cardNumber
        self.cardExpirationDate = cardExpirationDate
        self.cardCvx = cardCvx
    }
}

/// What the tokenization endpoint answers.
public enum TokenizationResult: Sendable, Equatable {
    /// `data=<token>` and the profiling attempt's reference.
    case success(token: Redacted<String>, profilingReference: String)
    /// `errorCode=<code>`.
    case failure(TokenizationErrorCode)
    /// Too many attempts from this address; retry after the given seconds (429).
    case rateLimited(retryAfter: Int)
}

/// Card registrations: creation by the merchant, tokenization by the browser, completion by the merchant.
public struct CardRegistrationService: Sendable {
    let environment: PaymentsEnvironment
    let securityCodes: SecurityCodeHold
    let rateLimiter: TokenizationRateLimiter

    /// Registration types that take card numbers (the others are wallet and bank methods).
    public static let cardTypes: [String] = MangopayCardType.allCases.filter { !$0.acceptedBrands.isEmpty }.map(
        \.rawValue)

    public init(environment: PaymentsEnvironment, securityCodes: SecurityCodeHold, rateLimiter: TokenizationRateLimiter)
    {
        self.environment = environment
        self.securityCodes = securityCodes
        self.rateLimiter = rateLimiter
    }

    /// The URL the browser posts card data to for registration `id` of `clientId`.
    public func tokenizationURL(clientId: String, id: String) -> String {
        environment.configuration.publicBaseURL + "/tokenize/" + clientId + "/" + id
    }

    /// Creates a registration for user `userId` in `currency`, accepting cards of `cardType`
    /// (`CB_VISA_MASTERCARD` by default).
    public func create(
        clientId: String, userId: String?, currency: String?, cardType: String?, tag: String?
    ) async throws -> CardRegistration {
        var rules = FieldRules()
        rules.required(userId, "UserId", maximum: 100)
        rules.required(currency, "Currency")
        if let currency, Currency(code: currency) == nil {
            rules.fail(
                "Currency",
                "The code \(FieldRules.quote(currency)) cannot be found in the standard ISO 4217 : http://en.wikipedia.org/wiki/ISO_4217"
            )
        }
        rules.oneOf(cardType, Self.cardTypes, "CardType")
        rules.length(tag, "Tag")
        try rules.check()
        let events: [EventType] = [.cardRegistrationCreated]
        let user = Identifier.isWellFormed(userId!) ? [(Collections.users, Identifier.scoped(clientId, userId!))] : []
        let found = try await EventLog.read(user, hooksFor: events, clientId: clientId, store: environment.store)
        guard !user.isEmpty, found.records[0] != nil else {
            throw PaymentsError.invalid("UserId", "The user \(Identifier.printable(userId!)) does not exist.")
        }
        let registration = CardRegistration(
            id: Identifier.make("cardreg_", random: environment.random), clientId: clientId, userId: userId!,
            currency: currency!, cardType: cardType ?? MangopayCardType.default.rawValue, tag: tag,
            creationDate: environment.nowSeconds, accessKey: Identifier.secret(count: 20, random: environment.random),
            preregistrationData: Identifier.secret(count: 64, random: environment.random), registrationData: nil,
            cardId: nil, result: nil, status: .created, cardHolderName: nil, failedAttempts: 0, pending: nil)
        let recordId = Identifier.scoped(clientId, registration.id)
        var writes: [RecordWrite] = [
            .put(
                collection: Collections.registrations, id: recordId, value: try RecordCoding.encode(registration),
                condition: .absent)
        ]
        let configuration = environment.configuration
        if let deadline = Self.deadline(
            of: registration, now: registration.creationDate, accessKeyLifetime: configuration.accessKeyLifetime,
            registrationLifetime: Int64(configuration.registrationLifetime))
        {
            writes.append(Self.deadlines.entry(for: recordId, at: deadline))
        }
        try await mapStoreErrors {
            try await environment.store.commit(
                writes
                    + EventLog.writes(
                        events, resourceId: registration.id, clientId: clientId, environment: environment,
                        hooked: found.hooked))
        }
        return registration
    }

    /// The sweeper's index of open registrations (``DeadlineIndex``): a VALIDATED registration is kept for good,
    /// so the sweeper reads only the registrations whose deadline came instead of every registration each round.
    static let deadlines = DeadlineIndex(collection: Collections.registrationDeadlines)

    /// When the sweeper next needs `registration`, as it is at `now` (see `expireRegistration`): nil once VALIDATED;
    /// the first second past the access key's lifetime while a card number can still come (the key is valid) or
    /// is waiting; otherwise `registrationLifetime` after creation.
    static func deadline(
        of registration: CardRegistration, now: Int64, accessKeyLifetime: TimeInterval, registrationLifetime: Int64
    ) -> Int64? {
        guard registration.status != .validated else { return nil }
        let keyExpiry = registration.creationDate + Int64(accessKeyLifetime.rounded(.down)) + 1
        let end = registration.creationDate + registrationLifetime
        if now < keyExpiry || registration.pending != nil { return min(keyExpiry, end) }
        return end
    }

    /// The registration `id` of `clientId`.
    /// - Throws: ``PaymentsError`` `.notFound`.
    public func get(clientId: String, id: String) async throws -> CardRegistration {
        guard let found = try await read(clientId: clientId, id: id) else {
            throw PaymentsError.notFound("CardRegistration", id: id)
        }
        let registration = found.value
        return registration
    }

    func read(clientId: String, id: String) async throws -> Stored<CardRegistration>? {
        guard Identifier.isWellFormed(clientId), Identifier.isWellFormed(id) else { return nil }
        return try await environment.store.read(
            CardRegistration.self, Collections.registrations, id: Identifier.scoped(clientId, id))
    }

    /// Handles a tokenization POST for registration `id` of `clientId`: checks the access key, validates the card
    /// with CardKit, vaults the number (the store seals it), holds the security code in memory, records the
    /// profiling attempt, and spends the access key, all in one atomic write. (The public entry point,
    /// `tokenize`, counts the result for `/metrics`: CardRegistrationService+Metrics.swift.)
    /// - Parameter requireSecurityCode: false only for the hosted checkout of a merchant that turned CVC2 off
    ///   (`cvc2Support=false`); a security code that is sent is still checked.
    func tokenizeUncounted(
        clientId: String, id: String, form: TokenizationForm, signals: DeviceSignals, requireSecurityCode: Bool
    ) async throws -> TokenizationResult {
        let configuration = environment.configuration
        let address = signals.ipAddress ?? ""
        if case .limited(let seconds) = rateLimiter.take(address) { return .rateLimited(retryAfter: seconds) }
        return try await retryingOnConflict(attempts: 5, fallback: .failure(.accessDenied)) {
            guard let found = try await read(clientId: clientId, id: id) else {
                return .failure(.accessDenied)
            }
            let registration = found.value
            let version = found.version
            let now = environment.nowSeconds
            let gate = registration.tokenizationGate(
                accessKey: form.accessKeyRef ?? "", preregistrationData: form.data ?? "", now: now,
                configuration: configuration)
            let failure: TokenizationErrorCode
            var countsAsFailure = true
            switch gate {
            case .refuse(let code, let counts):
                failure = code
                countsAsFailure = counts
            case .proceed:
                switch validateCard(
                    form, cardType: registration.cardType, clientId: clientId, requireSecurityCode: requireSecurityCode)
                {
                case .failure(let code):
                    failure = code
                case .success(let card):
                    return try await accept(
                        card, form: form, registration: registration, version: version,
                        signals: signals, now: now)
                }
            }
            guard countsAsFailure else { return .failure(failure) }
            var updated = registration
            updated.failedAttempts += 1
            try await write(updated, version: version)
            if updated.isLocked(configuration) {
                environment.logger.warning(
                    "card registration locked after failed tokenization attempts",
                    ["clientId": .string(clientId), "cardRegistrationId": .string(id)])
            }
            return .failure(failure)
        }
    }

    /// A card that passed validation: its number and everything derived from it.
    struct ValidatedCard {
        var pan: PAN
        var expiry: CardExpiry
        var provider: String
        var fingerprint: String
    }

    enum CardCheck {
        case success(ValidatedCard)
        case failure(TokenizationErrorCode)
    }

    /// Validates number (CardKit: characters, length, Luhn, brand), brand against the registration type, expiry
    /// against the clock, and the security code's size for the brand.
    func validateCard(
        _ form: TokenizationForm, cardType: String, clientId: String, requireSecurityCode: Bool = true
    )
        -> CardCheck
    {
        guard let number = form.cardNumber, let pan = try? PAN(number) else { return .failure(.invalidCardNumber) }
        guard let type = MangopayCardType(rawValue: cardType), type.accepts(pan.brand) else {
            return .failure(.invalidCardNumber)
        }
        guard let text = form.cardExpirationDate, text.utf8.count == 4, let expiry = try? CardExpiry(parsing: text),
            expiry.isValid(at: environment.clock.now)
        else { return .failure(.invalidExpiry) }
        if requireSecurityCode || form.cardCvx != nil {
            guard let cvx = form.cardCvx, SecurityCode.isValid(cvx, for: pan.brand) else {
                return .failure(.invalidSecurityCode)
            }
        }
        guard let key = try? environment.fingerprintKeys.fingerprintKey(forClient: clientId) else {
            return .failure(.accessDenied)
        }
        let provider = MangopayCardProvider(brand: pan.brand)?.rawValue ?? pan.brand.rawValue.uppercased()
        return .success(
            ValidatedCard(pan: pan, expiry: expiry, provider: provider, fingerprint: Self.fingerprint(pan, key: key)))
    }

    /// The card's fingerprint: HMAC-SHA256(client's key, the ASCII digits)'s first 16 bytes in hex, MACed from the
    /// PAN's own stack buffer into a stack one (both wiped): no heap copy of the number.
    static func fingerprint(_ pan: PAN, key: SymmetricKey) -> String {
        var mac: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        return withUnsafeMutableBytes(of: &mac) { out in
            defer { out.initializeMemory(as: UInt8.self, repeating: 0) }
            _ = pan.withASCIIDigits {
                HMACSHA256.authenticationCode(for: UnsafeRawBufferPointer($0), using: key, into: out)
            }
            return Identifier.hex(UnsafeRawBufferPointer(rebasing: out[0..<16]))
        }
    }

    private func accept(
        _ card: ValidatedCard, form: TokenizationForm, registration: CardRegistration, version: UInt64,
        signals: DeviceSignals, now: Int64
    ) async throws -> TokenizationResult {
        let clientId = registration.clientId
        let cardId = Identifier.make("card_", random: environment.random)
        let token = Identifier.secret(count: 64, random: environment.random)
        let bounded = signals.bounded
        let attempt = ProfilingAttempt(
            reference: Identifier.make("pa_", random: environment.random), clientId: clientId,
            cardRegistrationId: registration.id, cardId: cardId, ipAddress: bounded.ipAddress,
            userAgent: bounded.userAgent, acceptLanguage: bounded.acceptLanguage, device: bounded.device,
            creationDate: now)
        var updated = registration
        updated.pending = PendingCard(
            cardId: cardId, tokenDigest: CardRegistration.digest(token: token[...]), brand: card.pan.brand.rawValue,
            cardProvider: card.provider, alias: card.pan.alias, expirationDate: card.expiry.mmyy,
            fingerprint: card.fingerprint,
            country: environment.configuration.countryTable.country(forBIN: card.pan.bin).flatMap(CountryCode.alpha3),
            profilingReference: attempt.reference, tokenizedAt: now)
        var vaultValue = CardNumberRecord.encode(card.pan, expiry: card.expiry)
        defer { vaultValue.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        try await mapStoreErrors {
            try await environment.store.commit([
                .put(
                    collection: Collections.registrations, id: Identifier.scoped(clientId, registration.id),
                    value: try RecordCoding.encode(updated), condition: .version(version)),
                .put(
                    collection: Collections.vault, id: Identifier.scoped(clientId, cardId), value: vaultValue,
                    condition: .absent),
                .put(
                    collection: Collections.profilingAttempts, id: Identifier.scoped(clientId, attempt.reference),
                    value: try RecordCoding.encode(attempt), condition: .absent),
            ])
        }
        if let cvx = form.cardCvx {
            securityCodes.hold(
                clientId: clientId, cardId: cardId, digits: cvx.utf8,
                lifetime: environment.configuration.securityCodeRetention)
        }
        if environment.logger.minimumLevel <= .info {  // no metadata dictionary (nor alias) for a line not written
            environment.logger.info(
                "card tokenized",
                [
                    "clientId": .string(clientId), "cardRegistrationId": .string(registration.id),
                    "cardId": .string(cardId), "alias": .redacted(card.pan.alias),
                ])
        }
        return .success(token: Redacted(token), profilingReference: attempt.reference)
    }

    private func write(_ registration: CardRegistration, version: UInt64) async throws {
        try await mapStoreErrors {
            try await environment.store.put(
                Collections.registrations, id: Identifier.scoped(registration.clientId, registration.id),
                value: try RecordCoding.encode(registration), condition: .version(version))
        }
    }

    /// Completes registration `id` with the `RegistrationData` the browser received (`data=…` or
    /// `errorCode=…`): `VALIDATED` with a new card, or `ERROR` with a result code. Read-only fields a client sends
    /// back are not parameters here, so they are ignored.
    /// - Throws: ``PaymentsError`` `.notFound`, `.invalidParameters` (over-long fields, or other data sent to a
    ///   finished registration).
    public func update(
        clientId: String, id: String, registrationData: String?, cardHolderName: String?, tag: String?
    ) async throws -> CardRegistration {
        try await apply(
            clientId: clientId, id: id, registrationData: registrationData, cardHolderName: cardHolderName, tag: tag,
            byDevice: false)
    }

    /// Completes registration `id` for a caller without credentials: the shopper's device, as the Checkout SDKs and
    /// the JS kit do. Only the `data=` value this daemon answered that registration's tokenization, within its
    /// lifetime, validates it, and only once; the answer is what ``update(clientId:id:registrationData:cardHolderName:tag:)``
    /// answers.
    /// - Throws: ``deviceRefusal`` for anything else (forged, replayed, expired or another registration's data, an
    ///   unknown registration), changing nothing.
    public func completeFromDevice(
        clientId: String, id: String, registrationData: String
    ) async throws
        -> CardRegistration
    {
        do {
            return try await apply(
                clientId: clientId, id: id, registrationData: registrationData, cardHolderName: nil, tag: nil,
                byDevice: true)
        } catch let error as PaymentsError where error.code == .notFound || error.code == .invalidParameters {
            throw Self.deviceRefusal
        }
    }

    /// The one refusal of a device's completion: nothing in it tells why, or anything about a card.
    public static let deviceRefusal = PaymentsError.invalid(
        "RegistrationData",
        "Not the data this card registration's tokenization answered, or already used, or expired; complete the"
            + " registration once, with the data the tokenization answered")

    private func apply(
        clientId: String, id: String, registrationData: String?, cardHolderName: String?, tag: String?,
        byDevice: Bool
    ) async throws -> CardRegistration {
        var rules = FieldRules()
        rules.length(registrationData, "RegistrationData", maximum: 4096)
        rules.length(cardHolderName, "CardHolderName")
        rules.length(tag, "Tag")
        try rules.check()
        return try await retryingOnConflict(
            attempts: 5,
            exhausted: PaymentsError(
                .concurrentChange, "The card registration kept changing under this request; nothing was written")
        ) {
            let events: [EventType] = [.cardRegistrationValidated, .cardRegistrationError]
            guard Identifier.isWellFormed(clientId), Identifier.isWellFormed(id) else {
                throw PaymentsError.notFound("CardRegistration", id: id)
            }
            let read = try await EventLog.read(
                [(Collections.registrations, Identifier.scoped(clientId, id))], hooksFor: events, clientId: clientId,
                store: environment.store)
            guard let record = read.records[0] else { throw PaymentsError.notFound("CardRegistration", id: id) }
            let registration = try RecordCoding.decode(CardRegistration.self, from: record)
            let version = record.version
            var updated = registration
            if let cardHolderName { updated.cardHolderName = cardHolderName }
            if let tag { updated.tag = tag }
            guard let registrationData else {
                if updated == registration { return registration }
                try await write(updated, version: version)
                return updated
            }
            let now = environment.nowSeconds
            var writes: [RecordWrite] = []
            let completion = registration.completion(
                registrationData: registrationData, now: now, configuration: environment.configuration)
            if byDevice {
                guard case .validate = completion else { throw Self.deviceRefusal }
            }
            switch completion {
            case .unchanged:
                return registration
            case .alreadyProcessed:
                throw PaymentsError.invalid(
                    "RegistrationData",
                    "The card registration has already been processed (status \(registration.status.rawValue)).")
            case .fail(let result):
                writes += try EventLog.writes(
                    [.cardRegistrationError], resourceId: id, clientId: clientId, environment: environment,
                    hooked: read.hooked)
                updated.status = .error
                updated.result = result
                updated.registrationData = registrationData
                if let pending = registration.pending {
                    writes.append(
                        .delete(
                            collection: Collections.vault, id: Identifier.scoped(clientId, pending.cardId),
                            condition: .unconditional))
                    securityCodes.discard(clientId: clientId, cardId: pending.cardId)
                }
            case .validate(let pending):
                writes += try EventLog.writes(
                    [.cardRegistrationValidated], resourceId: id, clientId: clientId, environment: environment,
                    hooked: read.hooked)
                updated.status = .validated
                updated.result = .success
                updated.registrationData = registrationData
                updated.cardId = pending.cardId
                let card = Card(
                    id: pending.cardId, clientId: clientId, userId: registration.userId,
                    currency: registration.currency,
                    cardType: registration.cardType, cardProvider: pending.cardProvider, brand: pending.brand,
                    alias: pending.alias, expirationDate: pending.expirationDate, country: pending.country,
                    active: true,
                    validity: .unknown, fingerprint: pending.fingerprint, cardHolderName: updated.cardHolderName,
                    tag: updated.tag, creationDate: now, cardRegistrationId: registration.id)
                writes += [
                    .put(
                        collection: Collections.cards, id: Identifier.scoped(clientId, card.id),
                        value: try RecordCoding.encode(card), condition: .absent),
                    .put(
                        collection: Collections.cardsByUser, id: Identifier.indexed(clientId, card.userId, card.id),
                        value: [], condition: .unconditional),
                    .put(
                        collection: Collections.cardsByFingerprint,
                        id: Identifier.indexed(clientId, card.fingerprint, card.id), value: [],
                        condition: .unconditional),
                ]
            }
            writes.insert(
                .put(
                    collection: Collections.registrations, id: Identifier.scoped(clientId, id),
                    value: try RecordCoding.encode(updated), condition: .version(version)), at: 0)
            try await mapStoreErrors { try await environment.store.commit(writes) }
            return updated
        }
    }
}

/// The vault record of a card number: version byte 1, the ASCII digits, `|`, the expiry `MMYY`. The record store
/// seals it (the file store encrypts every value with AES-256-GCM, record id and key version in the AAD).
enum CardNumberRecord {
    static func encode(_ pan: PAN, expiry: CardExpiry) -> [UInt8] {
        pan.withASCIIDigits { digits in
            var value: [UInt8] = [1]
            value.reserveCapacity(digits.count + 6)
            value.append(contentsOf: digits)
            value.append(0x7C)
            value.append(contentsOf: expiry.mmyy.utf8)
            return value
        }
    }

    static func decode(_ value: [UInt8]) -> (PAN, CardExpiry)? {
        guard value.first == 1, let bar = value.firstIndex(of: 0x7C) else { return nil }
        let pan: PAN? = value[1..<bar].withUnsafeBufferPointer { try? PAN(validating: $0) }
        guard let pan, let expiry = try? CardExpiry(parsing: String(decoding: value[(bar + 1)...], as: UTF8.self))
        else { return nil }
        return (pan, expiry)
    }
}
