import CardKit
import Foundation
public import Risk
import VaultCore
public import VaultCrypto
import VaultStore

/// One risk verdict on a pay-in, as the profiling attempt it used shows it.
public struct PayInAssessment: Sendable, Equatable, Codable {
    public var transactionId: String
    public var score: Int
    public var decision: RiskDecision
    public var reasons: [RiskReason]
    public var creationDate: Int64
}

/// What the sandbox ACS page shows about a pending challenge (never the card number: only its alias).
public struct ChallengeView: Sendable, Equatable {
    public var transactionId: String
    public var amount: Funds
    public var cardAlias: String
    public var statementDescriptor: String?
    public var isFinal: Bool
    public var status: String
    /// What the flow that started the authentication asked the page to show, if anything.
    public var display: ChallengeDisplay? = nil
    /// The transaction's `Culture` (a two-letter language code), if given.
    public var culture: String? = nil
    /// True for a card validation (no funds move unless ``display`` names an amount).
    public var isCardValidation: Bool = false
}

/// Direct card pay-ins, card validations and refunds: validation of the merchant's request, risk scoring,
/// the 3-D Secure state machine, and the durable application of its actions (wallet credit, card validity,
/// security-code wipe) in one atomic store batch per transition.
public struct PayInService: Sendable {
    let environment: PaymentsEnvironment
    let cards: CardService
    let wallets: WalletService
    let users: UserService
    let securityCodes: SecurityCodeHold
    public let sandbox: SandboxBehaviour
    public let riskEngine: RiskEngine
    /// The risk history's counters (one set per service: every pay-in of the daemon goes through it).
    let riskCounters: RiskCounters
    /// Turns on wallets, for the credits of concurrent pay-ins (shared by every service of the environment).
    var walletTurns: HotRecordQueue<Wallet> { environment.walletTurns }

    static let payIns = Collections.payIns
    static let validations = Collections.validations
    static let refunds = Collections.refunds
    static let byCard = Collections.transactionsByCard
    static let refundsByPayIn = Collections.refundsByPayIn
    static let awaiting = Collections.challengesAwaiting
    static let assessments = Collections.profilingAssessments
    static let preauthorizations = Collections.preauthorizations
    static let depositPreauthorizations = Collections.depositPreauthorizations

    public init(
        environment: PaymentsEnvironment, securityCodes: SecurityCodeHold,
        sandbox: SandboxBehaviour = SandboxBehaviour(),
        riskEngine: RiskEngine = RiskEngine()
    ) {
        self.environment = environment
        self.cards = CardService(environment: environment, securityCodes: securityCodes)
        self.wallets = WalletService(environment: environment)
        self.users = UserService(environment: environment)
        self.securityCodes = securityCodes
        self.sandbox = sandbox
        self.riskEngine = riskEngine
        self.riskCounters = RiskCounters(refreshAfter: environment.configuration.riskCountersRefreshSeconds)
    }

    var history: PayInRiskHistory {
        PayInRiskHistory(environment: environment, policy: riskEngine.policy, counters: riskCounters)
    }

    static func collection(_ purpose: PayInStateMachine.Purpose) -> String {
        switch purpose {
        case .payIn: payIns
        case .cardValidation: validations
        case .preauthorization: preauthorizations
        case .depositPreauthorization: depositPreauthorizations
        }
    }

    // MARK: Create

    /// Creates a direct card pay-in (or, with `purpose: .cardValidation`, a validation of `request.cardId`):
    /// validates it, scores it, authorizes it, and persists the result before returning.
    /// - Throws: ``PaymentsError`` `.invalidParameters` naming every wrong field, `.unavailable` when the
    ///   store cannot write.
    public func create(
        clientId: String, request: PayInRequest, purpose: PayInStateMachine.Purpose = .payIn
    )
        async throws -> PayIn
    {
        let checked = try await validate(clientId: clientId, request: request, purpose: purpose)
        let now = environment.nowSeconds
        let attempt = checked.attempt
        let ipAddress = request.ipAddress ?? attempt?.ipAddress
        let deviceId = try PayInRiskHistory.deviceId(
            of: attempt, clientId: clientId, keys: environment.fingerprintKeys)
        let keys = PayInRiskHistory.Keys(
            fingerprint: checked.card.fingerprint, userId: checked.card.userId,
            ipAddress: try PayInRiskHistory.ipKey(ipAddress, clientId: clientId, environment: environment),
            deviceId: deviceId
        )
        var signals = try await history.signals(
            clientId: clientId, keys: keys, amount: checked.debited.amount, currency: checked.debited.currency, now: now
        )
        signals.cardCountry = environment.configuration.countryTable.country(forBIN: checked.card.alias)
        signals.ipCountry = ipAddress.flatMap { environment.configuration.countryTable.country(forIP: $0) }
        let risk = riskEngine.assess(signals)

        let secureMode = SecureMode(rawValue: request.secureMode ?? "DEFAULT") ?? .default
        let deadline = environment.clock.now.addingTimeInterval(TimeInterval(sandbox.challengeWindowSeconds))
        var authorization = AuthorizationPolicy.decide(
            secureMode: secureMode, amount: checked.debited.amount, risk: risk.decision, cardAlias: checked.card.alias,
            sandbox: sandbox, challengeDeadline: deadline)
        if request.paymentCategory == "TelephoneOrder", case .challenge = authorization {
            authorization = .frictionless  // mail and telephone orders are out of scope of 3-D Secure
        }

        var payIn = PayIn(
            id: Identifier.make(Self.idPrefix(purpose), random: environment.random),
            clientId: clientId, machine: PayInStateMachine(purpose: purpose), authorId: request.authorId!,
            creditedUserId: checked.wallet.map { request.creditedUserId ?? $0.value.ownerId },
            creditedWalletId: checked.wallet?.value.id, debitedFunds: checked.debited, fees: checked.fees,
            cardId: checked.card.id, cardInfo: cardInfo(checked.card), secureMode: secureMode,
            secureModeReturnURL: request.secureModeReturnURL!, secureModeNeeded: false, challengeSecret: nil,
            ipAddress: request.ipAddress, browserInfo: request.browserInfo,
            statementDescriptor: request.statementDescriptor, tag: request.tag, billing: request.billing,
            shipping: request.shipping, culture: request.culture,
            profilingAttemptReference: request.profilingAttemptReference,
            preferredCardNetwork: request.preferredCardNetwork, paymentCategory: request.paymentCategory, risk: risk,
            fingerprint: checked.card.fingerprint, deviceId: deviceId, creationDate: now, executionDate: nil,
            refunded: 0)
        payIn.hold = Self.newHold(purpose, authorized: checked.debited.amount, now: now)
        payIn.challengeDisplay = request.challengeDisplay
        let outcome = try payIn.machine.handle(.authorize(authorization))

        // Every record below is named after the new transaction, so it is created `.absent` (it cannot exist yet), and
        // PostgreSQL, which seals each record under its version, reads no versions first as for `.unconditional` puts.
        var extra = PayInRiskHistory.attemptWrites(clientId: clientId, keys: keys, transactionId: payIn.id, now: now)
        extra += TransactionIndex.writes(for: payIn)
        extra += try holdCreationWrites(payIn)
        extra.append(
            .put(
                collection: Self.byCard, id: Identifier.indexed(clientId, payIn.cardId, payIn.id),
                value: Array(purpose.rawValue.utf8), condition: .absent))
        if let reference = request.profilingAttemptReference, attempt != nil {
            let assessment = PayInAssessment(
                transactionId: payIn.id, score: risk.score, decision: risk.decision, reasons: risk.reasons,
                creationDate: now)
            extra.append(
                .put(
                    collection: Self.assessments, id: Identifier.indexed(clientId, reference, payIn.id),
                    value: try RecordCoding.encode(assessment), condition: .absent))
        }
        if case .transitioned(let actions) = outcome, actions.contains(.presentChallenge) {
            payIn.secureModeNeeded = true
            payIn.challengeSecret = Identifier.secret(count: 32, random: environment.random)
            extra.append(
                .put(
                    collection: Self.awaiting, id: Self.awaitingId(payIn),
                    value: Array(String(Int64(deadline.timeIntervalSince1970)).utf8), condition: .absent))
        }
        guard case .transitioned(let actions) = outcome else {
            throw PaymentsError(.invalidState, "The transaction could not be authorized")
        }
        payIn = try await apply(
            actions, to: payIn, previousVersion: nil, extra: extra, keys: keys,
            validatedWallet: checked.wallet.map { ValidatedWallet(stored: $0, stamp: checked.walletStamp) },
            cardValidity: checked.card.validity, hookedEvents: checked.hooked)
        environment.metrics.created(payIn, risk: risk)
        if environment.logger.minimumLevel <= .info {  // no metadata dictionary when the line is not written
            environment.logger.info(
                purpose.createdLogMessage,
                [
                    "clientId": .string(clientId), "transactionId": .string(payIn.id), "status": .string(payIn.status),
                    "riskScore": .int(risk.score), "riskDecision": .string(risk.decision.rawValue),
                ])
        }
        return payIn
    }

    /// A wallet read before its credit, with the stamp of its turns taken before the read.
    struct ValidatedWallet: Sendable {
        var stored: Stored<Wallet>
        var stamp: UInt64?
    }

    private struct CheckedRequest {
        var card: Card
        /// The credited wallet as `validate` read it, with its version (nil for a validation or a hold).
        var wallet: Stored<Wallet>?
        /// The wallet turns' stamp taken before that read (see ``HotRecordQueue/stamp(_:)``).
        var walletStamp: UInt64? = nil
        var debited: Funds
        var fees: Funds
        /// The profiling attempt the request names, when it exists.
        var attempt: ProfilingAttempt?
        /// The types of ``stepEventTypes(_:)`` the client has a hook for, read with the named records.
        var hooked: Set<EventType>
    }

    /// What a new transaction names, as ``readNamed(clientId:cardId:authorId:walletId:reference:eventTypes:)`` found it (a
    /// struct, not a tuple: see ``Stored``).
    private struct NamedRecords {
        var card: Card?
        /// Only presence matters.
        var author: Record?
        var wallet: Stored<Wallet>?
        var attempt: ProfilingAttempt?
        var hooked: Set<EventType>
    }

    /// The records a new transaction names, read together (one round trip on PostgreSQL): its card, its author, its
    /// credited wallet (when `walletId` is given) and its profiling attempt (when `reference` is given), and the
    /// client's hooks for `eventTypes`. A malformed id is not read: it names nothing.
    private func readNamed(
        clientId: String, cardId: String, authorId: String, walletId: String?, reference: String?,
        eventTypes: [EventType]
    ) async throws -> NamedRecords {
        func key(_ collection: String, _ id: String?) -> (collection: String, id: String)? {
            guard let id, Identifier.isWellFormed(id) else { return nil }
            return (collection, Identifier.scoped(clientId, id))
        }
        let wanted = [
            key(Collections.cards, cardId), key(Collections.users, authorId), key(Collections.wallets, walletId),
            key(Collections.profilingAttempts, reference),
        ]
        let read = try await EventLog.read(
            wanted.compactMap { $0 }, hooksFor: eventTypes, clientId: clientId, store: environment.store)
        var found = read.records.makeIterator()
        let records = wanted.map { $0 == nil ? nil : found.next() ?? nil }
        return NamedRecords(
            card: try records[0].map { try RecordCoding.decode(Card.self, from: $0) }, author: records[1],
            wallet: try records[2].map {
                Stored(value: try RecordCoding.decode(Wallet.self, from: $0), version: $0.version)
            },
            attempt: try records[3].map { try RecordCoding.decode(ProfilingAttempt.self, from: $0) },
            hooked: read.hooked)
    }

    private func validate(
        clientId: String, request: PayInRequest, purpose: PayInStateMachine.Purpose
    ) async throws
        -> CheckedRequest
    {
        var rules = FieldRules()
        rules.required(request.authorId, "AuthorId", maximum: 100)
        rules.required(request.cardId, "CardId", maximum: 100)
        rules.required(request.secureModeReturnURL, "SecureModeReturnURL", maximum: 2000)
        if let url = request.secureModeReturnURL, !Self.isReturnURL(url) {
            rules.fail("SecureModeReturnURL", "The SecureModeReturnURL must be an absolute http or https URL.")
        }
        if purpose == .payIn {
            rules.required(request.creditedWalletId, "CreditedWalletId", maximum: 100)
            rules.funds(request.debitedFunds, "DebitedFunds", allowZero: false)
            rules.funds(request.fees, "Fees", allowZero: true)
        } else if purpose != .cardValidation {
            rules.funds(request.debitedFunds, "DebitedFunds", allowZero: false)
        }
        rules.oneOf(request.secureMode, SecureMode.allCases.map(\.rawValue), "SecureMode")
        rules.oneOf(request.paymentCategory, ["ECommerce", "TelephoneOrder"], "PaymentCategory")
        rules.oneOf(request.preferredCardNetwork, ["VISA", "MASTERCARD", "CB", "MAESTRO"], "PreferredCardNetwork")
        rules.length(request.tag, "Tag")
        rules.length(request.profilingAttemptReference, "ProfilingAttemptReference", maximum: 128)
        if let descriptor = request.statementDescriptor,
            descriptor.isEmpty || descriptor.utf8.count > 10
                || !descriptor.utf8.allSatisfy({
                    Identifier.isIdentifierByte($0) && $0 != 0x5F && $0 != 0x2D || $0 == 0x20
                })
        {
            rules.fail("StatementDescriptor", "The StatementDescriptor must be 1 to 10 letters, digits or spaces.")
        }
        if let culture = request.culture,
            culture.utf8.count != 2
                || !culture.utf8.allSatisfy({ $0 >= 0x41 && $0 <= 0x5A || $0 >= 0x61 && $0 <= 0x7A })
        {
            rules.fail("Culture", "The Culture must be a two-letter language code.")
        }
        if request.paymentCategory != "TelephoneOrder" {
            // 3-D Secure may be needed on any e-commerce transaction: the browser data must be there.
            if request.ipAddress == nil { rules.fail("IpAddress", "The IpAddress field is required.") }
            if request.browserInfo == nil { rules.fail("BrowserInfo", "The BrowserInfo field is required.") }
        }
        if let ip = request.ipAddress, !Self.isIPAddress(ip) {
            rules.fail("IpAddress", "The IpAddress must be an IPv4 or IPv6 address.")
        }
        if let info = request.browserInfo { Self.checkBrowserInfo(info, &rules) }
        if let billing = request.billing?.address { billing.validate(&rules, prefix: "Billing.Address") }
        if let shipping = request.shipping?.address { shipping.validate(&rules, prefix: "Shipping.Address") }
        try rules.check()

        // The wallet turns' stamp is taken before the wallet is read (see ``HotRecordQueue/stamp(_:)``).
        let walletStamp =
            purpose == .payIn ? walletTurns.stamp(Identifier.scoped(clientId, request.creditedWalletId!)) : nil
        let named = try await readNamed(
            clientId: clientId, cardId: request.cardId!, authorId: request.authorId!,
            walletId: purpose == .payIn ? request.creditedWalletId : nil, reference: request.profilingAttemptReference,
            eventTypes: Self.stepEventTypes(purpose))
        guard let card = named.card else {
            throw PaymentsError.invalid("CardId", "The card \(Identifier.printable(request.cardId!)) does not exist.")
        }
        guard named.author != nil else {
            throw PaymentsError.invalid(
                "AuthorId", "The user \(Identifier.printable(request.authorId!)) does not exist.")
        }
        if !card.active { rules.fail("CardId", "The card is not active.") }
        if card.userId != request.authorId { rules.fail("CardId", "The card does not belong to the author.") }
        guard purpose == .payIn else {
            try rules.check()
            let zero = Funds(currency: card.currency, amount: 0)
            let held = purpose == .cardValidation ? zero : request.debitedFunds!
            return CheckedRequest(
                card: card, wallet: nil, debited: held, fees: Funds(currency: held.currency, amount: 0),
                attempt: named.attempt, hooked: named.hooked)
        }
        guard let wallet = named.wallet else {
            throw PaymentsError.invalid(
                "CreditedWalletId", "The wallet \(Identifier.printable(request.creditedWalletId!)) does not exist.")
        }
        let debited = request.debitedFunds!
        let fees = request.fees!
        rules.credit(of: wallet.value, debited: debited, fees: fees, creditedUserId: request.creditedUserId)
        try rules.check()
        return CheckedRequest(
            card: card, wallet: wallet, walletStamp: walletStamp, debited: debited, fees: fees, attempt: named.attempt,
            hooked: named.hooked)
    }

    /// The screen and colour values a browser can report (EMV 3-D Secure's ranges), and a short time zone offset.
    private static func checkBrowserInfo(_ info: BrowserInfo, _ rules: inout FieldRules) {
        if let depth = info.colorDepth, !(1...48).contains(depth) {
            rules.fail("BrowserInfo.ColorDepth", "The ColorDepth must be a number of bits between 1 and 48.")
        }
        for (value, name) in [(info.screenHeight, "ScreenHeight"), (info.screenWidth, "ScreenWidth")] {
            if let value, !(0...65_535).contains(value) {
                rules.fail("BrowserInfo." + name, "The \(name) must be a number of pixels between 0 and 65535.")
            }
        }
        rules.length(info.timeZoneOffset, "BrowserInfo.TimeZoneOffset", maximum: 8)
    }

    static func isReturnURL(_ text: String) -> Bool {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else { return false }
        return true
    }

    static func isIPAddress(_ text: String) -> Bool {
        if CountryTable.parseIPv4(text) != nil { return true }
        var address = in6_addr()
        return text.utf8.count <= 45 && inet_pton(AF_INET6, text, &address) == 1
    }

    func profilingAttempt(clientId: String, reference: String?) async throws -> ProfilingAttempt? {
        guard let reference, Identifier.isWellFormed(reference) else { return nil }
        return try await environment.store.read(
            ProfilingAttempt.self, Collections.profilingAttempts, id: Identifier.scoped(clientId, reference))?.value
    }

    func cardInfo(_ card: Card) -> CardInfo {
        CardInfo(
            bin: String(card.alias.prefix(6)), issuingBank: "CARDVAULT SANDBOX BANK",
            issuerCountryCode: environment.configuration.countryTable.country(forBIN: card.alias), type: "DEBIT",
            brand: card.cardProvider, subType: nil)
    }

    // MARK: Read

    /// The pay-in (or validation) `id` of `clientId`; a challenge past its deadline is expired first.
    public func get(clientId: String, id: String, purpose: PayInStateMachine.Purpose = .payIn) async throws -> PayIn {
        guard let found = try await read(clientId: clientId, id: id, purpose: purpose) else {
            throw PaymentsError.notFound(Self.resourceName(purpose), id: id)
        }
        let payIn = found.value
        if case .awaitingChallenge(let expiresAt) = payIn.machine.state, environment.clock.now >= expiresAt {
            return try await transition(
                clientId: clientId, id: id, purpose: purpose, event: .expire(now: environment.clock.now))
        }
        return payIn
    }

    func read(clientId: String, id: String, purpose: PayInStateMachine.Purpose) async throws -> Stored<PayIn>? {
        guard Identifier.isWellFormed(id) else { return nil }
        return try await environment.store.read(
            PayIn.self, Self.collection(purpose), id: Identifier.scoped(clientId, id))
    }

    /// The risk verdicts of every pay-in that named profiling attempt `reference`.
    public func assessments(clientId: String, reference: String) async throws -> [PayInAssessment] {
        guard Identifier.isWellFormed(reference) else { return [] }
        return try await environment.store.scanAll(
            Self.assessments, prefix: Identifier.indexed(clientId, reference, "")
        )
        .map { try RecordCoding.decode(PayInAssessment.self, from: $0) }
        .sorted { ($0.creationDate, $0.transactionId) < ($1.creationDate, $1.transactionId) }
    }

    /// The pay-ins made with card `cardId`, a page at a time.
    public func transactions(clientId: String, cardId: String, page: PageRequest) async throws -> Page<PayIn> {
        _ = try await cards.get(clientId: clientId, id: cardId)
        return page.slice(try await payIns(clientId: clientId, cardId: cardId), creationDate: \.creationDate, id: \.id)
    }

    /// The pay-ins (not validations) of every card of `clientId` with `fingerprint`, a page at a time; an
    /// unknown fingerprint has none.
    public func transactions(clientId: String, fingerprint: String, page: PageRequest) async throws -> Page<PayIn> {
        var items: [PayIn] = []
        for card in try await cards.all(clientId: clientId, fingerprint: fingerprint) {
            items += try await payIns(clientId: clientId, cardId: card.id)
        }
        return page.slice(items, creationDate: \.creationDate, id: \.id)
    }

    private func payIns(clientId: String, cardId: String) async throws -> [PayIn] {
        var items: [PayIn] = []
        let prefix = Identifier.indexed(clientId, cardId, "")
        for entry in try await environment.store.scanAll(Self.byCard, prefix: prefix) {
            let purpose = PayInStateMachine.Purpose(rawValue: String(decoding: entry.value, as: UTF8.self)) ?? .payIn
            guard purpose == .payIn else { continue }
            if let found = try await read(
                clientId: clientId, id: String(entry.id.dropFirst(prefix.count)), purpose: purpose)
            {
                let payIn = found.value
                items.append(payIn)
            }
        }
        return items
    }

    // MARK: Challenge

    /// The link to the sandbox ACS page for a pending challenge.
    public func challengeURL(for payIn: PayIn) -> String? {
        guard payIn.secureModeNeeded, let secret = payIn.challengeSecret else { return nil }
        if payIn.machine.redirect == .payPalApproval {
            return environment.configuration.publicBaseURL
                + "/paypal/checkout/\(payIn.clientId)/\(payIn.id)?s=\(secret)"
        }
        let kind = Self.kind(payIn.machine.purpose)
        return environment.configuration.publicBaseURL + "/acs/\(kind)/\(payIn.clientId)/\(payIn.id)?s=\(secret)"
    }

    /// The pay-in behind an ACS link, after checking its secret in constant time.
    /// - Throws: ``PaymentsError`` `.notFound` for an unknown transaction or a wrong secret (the same answer).
    public func challenge(kind: String, clientId: String, id: String, secret: String) async throws -> ChallengeView {
        let payIn = try await authenticatedChallenge(
            kind: kind, clientId: clientId, id: id, secret: secret, redirect: .threeDSecure)
        let alias =
            try await cards.read(clientId: clientId, id: payIn.cardId)?.value.alias ?? payIn.cardInfo.bin + "XXXXXX"
        return ChallengeView(
            transactionId: payIn.id, amount: payIn.debitedFunds, cardAlias: alias,
            statementDescriptor: payIn.statementDescriptor, isFinal: payIn.machine.state.isFinal, status: payIn.status,
            display: payIn.challengeDisplay, culture: payIn.culture,
            isCardValidation: payIn.machine.purpose == .cardValidation)
    }

    func authenticatedChallenge(
        kind: String, clientId: String, id: String, secret: String, redirect: PayInStateMachine.Redirect
    ) async throws -> PayIn {
        guard let purpose = Self.purpose(kind: kind), Identifier.isWellFormed(clientId),
            let payIn = try await read(clientId: clientId, id: id, purpose: purpose),
            payIn.value.machine.redirect == redirect,
            let expected = payIn.value.challengeSecret, ConstantTime.equals(Array(expected.utf8), Array(secret.utf8))
        else { throw PaymentsError(.notFound, "This authentication link is not valid") }
        return payIn.value
    }

    static func purpose(kind: String) -> PayInStateMachine.Purpose? {
        PayInStateMachine.Purpose.allCases.first { Self.kind($0) == kind }
    }

    /// Answers a challenge from the ACS page: `code` is what the shopper typed, nil when they cancelled.
    /// A second answer changes nothing and gets the same final state.
    /// - Returns: the final pay-in and the return URL with `transactionId` added to its query.
    public func answerChallenge(
        kind: String, clientId: String, id: String, secret: String, code: String?
    ) async throws
        -> (PayIn, String)
    {
        let payIn = try await authenticatedChallenge(
            kind: kind, clientId: clientId, id: id, secret: secret, redirect: .threeDSecure)
        let now = environment.clock.now
        let event: PayInStateMachine.Event =
            code.map {
                .challengeCompleted(
                    passed: ConstantTime.equals(Array($0.utf8), Array(sandbox.challengeCode.utf8)), at: now)
            }
            ?? .challengeCancelled(at: now)
        let final = try await transition(clientId: clientId, id: id, purpose: payIn.machine.purpose, event: event)
        return (final, Self.returnURL(final.secureModeReturnURL, transactionId: final.id))
    }

    /// `url` with `transactionId=<id>` added to its query, before any fragment.
    public static func returnURL(_ url: String, transactionId: String) -> String {
        let fragmentStart = url.firstIndex(of: "#") ?? url.endIndex
        let base = url[..<fragmentStart]
        let separator = base.contains("?") ? (base.hasSuffix("?") || base.hasSuffix("&") ? "" : "&") : "?"
        return base + separator + "transactionId=" + transactionId + url[fragmentStart...]
    }

    /// Expires every challenge whose deadline has passed. The daemon calls this periodically; the records
    /// it reads are durable, so expiry also happens after a restart. One transaction that cannot move now
    /// (busy, or its entry is stale) never holds back the others: it is logged and retried on the next sweep,
    /// and an entry whose transaction does not exist is dropped.
    /// - Returns: how many transactions expired.
    /// - Throws: when the pending challenges cannot be read at all.
    @discardableResult
    public func expireDueChallenges() async throws -> Int {
        let now = environment.clock.now
        var expired = 0
        for entry in try await environment.store.scanAll(Self.awaiting) {
            guard let deadline = Int64(String(decoding: entry.value, as: UTF8.self)),
                Double(deadline) <= now.timeIntervalSince1970
            else { continue }
            let parts = entry.id.split(separator: ":", maxSplits: 2).map(String.init)
            guard parts.count == 3, let purpose = Self.purpose(kind: parts[0]) else { continue }
            do {
                let payIn = try await transition(
                    clientId: parts[1], id: parts[2], purpose: purpose, event: .expire(now: now))
                if payIn.result == payIn.machine.redirect.expired { expired += 1 }
            } catch let error as PaymentsError where error.code == .notFound {
                _ = try? await environment.store.commit(
                    [.delete(collection: Self.awaiting, id: entry.id, condition: .unconditional)])
            } catch {
                environment.logger.warning(
                    "challenge expiry postponed",
                    ["transactionId": .string(parts[2]), "error": .string(String(describing: type(of: error)))])
            }
        }
        return expired
    }

    static func awaitingId(_ payIn: PayIn) -> String {
        Self.kind(payIn.machine.purpose) + ":" + payIn.clientId + ":" + payIn.id
    }

    /// Applies `event` to the stored transaction, retrying on concurrent changes; exactly one caller sees the
    /// transition, every caller gets the final stored state.
    func transition(
        clientId: String, id: String, purpose: PayInStateMachine.Purpose, event: PayInStateMachine.Event
    )
        async throws -> PayIn
    {
        return try await retryingOnConflict(
            attempts: 10,
            exhausted: PaymentsError(
                .concurrentChange, "The transaction kept changing under this request; nothing was written")
        ) {
            guard let found = try await read(clientId: clientId, id: id, purpose: purpose) else {
                throw PaymentsError.notFound(Self.resourceName(purpose), id: id)
            }
            let stored = found.value
            let version = found.version
            var payIn = stored
            let outcome: PayInStateMachine.Outcome
            do {
                outcome = try payIn.machine.handle(event)
            } catch {
                throw PaymentsError(.invalidState, "The transaction cannot take this step now")
            }
            guard case .transitioned(let actions) = outcome else { return stored }
            payIn = try await apply(
                actions, to: payIn, previousVersion: version,
                extra: [.delete(collection: Self.awaiting, id: Self.awaitingId(payIn), condition: .unconditional)]
                    + (try await completionWrites(for: payIn)))
            environment.metrics.transitioned(payIn, event: event, now: environment.nowSeconds)
            if environment.logger.minimumLevel <= .info {
                environment.logger.info(
                    "transaction completed",
                    [
                        "clientId": .string(clientId), "transactionId": .string(id), "status": .string(payIn.status),
                        "resultCode": .string(payIn.result?.code ?? ""),
                    ])
            }
            return payIn
        }
    }

    /// A pay-in's or card validation's created, succeeded and failed event types (none for the other purposes).
    static func stepEventTypes(_ purpose: PayInStateMachine.Purpose) -> [EventType] {
        purpose == .payIn
            ? [.payInNormalCreated, .payInNormalSucceeded, .payInNormalFailed]
            : purpose == .cardValidation
                ? [.cardValidationCreated, .cardValidationSucceeded, .cardValidationFailed] : []
    }

    /// The events of a transaction's step, for its batch: `…_CREATED` when it is new, then `…_SUCCEEDED` or
    /// `…_FAILED` when the step made it final.
    /// - Parameter hooked: the types of ``stepEventTypes(_:)`` with a hook, when the caller read them (nil: read here).
    static func eventWrites(
        _ payIn: PayIn, created: Bool, environment: PaymentsEnvironment, hooked: Set<EventType>? = nil
    ) async throws -> [RecordWrite] {
        // Preauthorizations, deposits and the pay-ins that capture them write theirs in authorizationEventWrites.
        let purpose = payIn.machine.purpose
        guard purpose == .cardValidation || (purpose == .payIn && payIn.capturedFrom == nil) else { return [] }
        let step = stepEventTypes(purpose)
        var types = created ? [step[0]] : []
        switch payIn.machine.state {
        case .succeeded: types.append(step[1])
        case .failed: types.append(step[2])
        case .created, .awaitingChallenge: break
        }
        guard let hooked else {
            return try await EventLog.writes(
                types, resourceId: payIn.id, clientId: payIn.clientId, environment: environment)
        }
        return try EventLog.writes(
            types, resourceId: payIn.id, clientId: payIn.clientId, environment: environment, hooked: hooked)
    }

    /// Carries out a transition's actions in one atomic batch: the transaction itself (created, or updated at
    /// `previousVersion`), the wallet credit, the risk history and `extra` writes; then the card's validity
    /// (``markCard(clientId:cardId:valid:)``).
    /// Retries the wallet credit on concurrent changes; a conflict on the transaction itself is thrown.
    /// - Returns: the transaction as written.
    /// - Parameter keys: the transaction's risk dimensions when the caller has them (its creation computed them);
    ///   nil: derived from `payIn` (only needed when the step makes it final).
    /// - Parameter validatedWallet: the credited wallet as the caller read it, after a stamp of the wallet's
    ///   turns: the first attempt credits that copy instead of reading the wallet again when no change of the
    ///   wallet took a turn since the stamp (``HotRecordQueue/Turn/untouchedSinceStamp``).
    /// - Parameter cardValidity: the card's validity as the caller read it, if it did. A card that was VALID or
    ///   INVALID then still is (validity never goes back to UNKNOWN), so it is not read again to be marked.
    /// - Parameter hookedEvents: the event types with a hook, when the caller read them (nil: read here).
    func apply(
        _ actions: [PayInStateMachine.Action], to payIn: PayIn, previousVersion: UInt64?, extra: [RecordWrite],
        conflictEndsAttempt: Bool = false, keys: PayInRiskHistory.Keys? = nil,
        validatedWallet: ValidatedWallet? = nil, cardValidity: CardValidity? = nil,
        hookedEvents: Set<EventType>? = nil
    )
        async throws -> PayIn
    {
        var payIn = payIn
        let now = environment.nowSeconds
        if payIn.machine.state == .succeeded { payIn.executionDate = now }
        let recordsOutcome = payIn.machine.state.isFinal && payIn.capturedFrom == nil
        let keys =
            !recordsOutcome
            ? nil
            : try keys
                ?? PayInRiskHistory.Keys(
                    fingerprint: payIn.fingerprint, userId: payIn.authorId,
                    ipAddress: try PayInRiskHistory.ipKey(
                        payIn.ipAddress, clientId: payIn.clientId, environment: environment),
                    deviceId: payIn.deviceId)
        // Credits of one wallet take turns (see ``HotRecordQueue``): a wallet that many pay-ins credit at once
        // gets them one after another, sharing group commits, instead of conflicting. A conflict on the wallet
        // reads it again (the helper's retry, which takes a new turn); one on the transaction itself
        // goes to the caller, which must re-run the state machine on the new state.
        let eventWrites = try await Self.eventWrites(
            payIn, created: previousVersion == nil, environment: environment, hooked: hookedEvents)
        let walletKey =
            actions.contains(.creditWallet)
            ? payIn.creditedWalletId.map { Identifier.scoped(payIn.clientId, $0) } : nil
        var validated = validatedWallet?.stored.value.id == payIn.creditedWalletId ? validatedWallet : nil
        let written = try await retryingOnConflict(
            attempts: 10,
            exhausted: PaymentsError(
                .concurrentChange, "The wallet or card of this transaction kept changing under it; nothing was written")
        ) { () async throws -> Result<PayIn, StoreError> in
            var turn: HotRecordQueue<Wallet>.Turn?
            if let walletKey { turn = await walletTurns.take(walletKey, since: validated?.stamp) }
            defer { turn?.finish(failed: false) }
            // What the previous credit handed on; else the caller's copy if still current (first attempt only).
            let handedWallet = turn?.latest ?? (turn?.untouchedSinceStamp == true ? validated?.stored : nil)
            validated = nil
            var writtenWallet: Stored<Wallet>?
            var writes: [RecordWrite] = [
                .put(
                    collection: Self.collection(payIn.machine.purpose), id: Identifier.scoped(payIn.clientId, payIn.id),
                    value: try RecordCoding.encode(payIn),
                    condition: previousVersion.map { .version($0) } ?? .absent)
            ]
            writes += extra
            writes += eventWrites
            writes += try await authorizationEventWrites(payIn, isNew: previousVersion == nil)
            if let keys {
                writes += PayInRiskHistory.outcomeWrites(
                    clientId: payIn.clientId, keys: keys, transactionId: payIn.id,
                    succeeded: payIn.machine.state == .succeeded, amount: payIn.debitedFunds.amount,
                    currency: payIn.debitedFunds.currency, now: now)
            }
            for action in actions {
                switch action {
                case .creditWallet:
                    guard let walletId = payIn.creditedWalletId else {
                        throw PaymentsError(.invalidState, "The credited wallet no longer exists")
                    }
                    var storedWallet = handedWallet
                    if storedWallet == nil {
                        storedWallet = try await wallets.read(clientId: payIn.clientId, id: walletId)
                    }
                    guard let storedWallet else {
                        throw PaymentsError(.invalidState, "The credited wallet no longer exists")
                    }
                    let version = storedWallet.version
                    var credited = storedWallet.value
                    credited.balance = try Self.checked(
                        credited.balance.addingReportingOverflow(payIn.creditedFunds.amount), "DebitedFunds.Amount")
                    writes.append(
                        .put(
                            collection: Collections.wallets, id: Identifier.scoped(payIn.clientId, walletId),
                            value: try RecordCoding.encode(credited), condition: .version(version)))
                    writtenWallet = Stored(value: credited, version: version + 1)
                case .persist, .presentChallenge, .wipeSecurityCode, .markCard:
                    continue
                }
            }
            do {
                let handing = writtenWallet
                let currentTurn = turn
                try await mapStoreErrors {
                    try await environment.store.commit(
                        writes, whenQueued: { queued in currentTurn?.hand(queued ? handing : nil) })
                }
            } catch let error as StoreError where error.code == .conflict {
                // What the previous change handed on did not hold, or another writer got there: wait until the
                // change this one built on is done, so that the next attempt reads what it left.
                await turn?.settle()
                let current = try await environment.store.get(
                    Self.collection(payIn.machine.purpose), id: Identifier.scoped(payIn.clientId, payIn.id))
                if conflictEndsAttempt || current?.version != previousVersion { return .failure(error) }
                throw error
            }
            riskCounters.record(PayInRiskHistory.counterEvents(writes))
            if actions.contains(.wipeSecurityCode) {
                securityCodes.discard(clientId: payIn.clientId, cardId: payIn.cardId)
            }
            return .success(payIn)
        }
        let result = try written.get()
        for case .markCard(let valid) in actions where cardValidity ?? .unknown == .unknown {
            await markCard(clientId: result.clientId, cardId: result.cardId, valid: valid)
        }
        return result
    }

    /// Sets an UNKNOWN card's validity once the transaction that decided it has committed, in a commit of its own:
    /// the first pay-ins of a new card all read it UNKNOWN, and in their own batches all but one would conflict on
    /// the card after their commit was queued, failing every wallet credit handed on behind them (a cascade of
    /// conflicts that exhausted some pay-ins' retries). Best effort: a card left UNKNOWN (a crash between the two
    /// commits, a store that cannot write now) gets its validity from its next transaction.
    func markCard(clientId: String, cardId: String, valid: Bool) async {
        do {
            // A conflict: another transaction of the card marked it, or it changed; read it again.
            try await retryingOnConflict(attempts: 3, fallback: ()) {
                guard let found = try await cards.read(clientId: clientId, id: cardId), found.value.validity == .unknown
                else { return }
                var marked = found.value
                marked.validity = valid ? .valid : .invalid
                try await environment.store.commit([
                    .put(
                        collection: Collections.cards, id: Identifier.scoped(clientId, cardId),
                        value: try RecordCoding.encode(marked), condition: .version(found.version))
                ])
            }
        } catch {
            environment.logger.warning(
                "card validity not recorded",
                [
                    "clientId": .string(clientId), "cardId": .string(cardId),
                    "error": .string(String(describing: type(of: error))),
                ])
        }
    }
}
