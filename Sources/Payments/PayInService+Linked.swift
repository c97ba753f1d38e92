import CardKit
import Foundation
import Risk
import VaultCore
import VaultStore

/// A pay-in that another flow prepared (a recurring CIT or MIT, an Apple Pay or Google Pay pay-in): its parties,
/// funds and card are checked already; ``PayInService/createLinked(clientId:_:)`` scores, authorizes and writes it.
struct LinkedPayIn: Sendable {
    var kind: PayInKind
    /// The card of a recurring pay-in; nil for a wallet token.
    var card: Card?
    var wallet: Wallet
    var authorId: String
    var creditedUserId: String
    var debited: Funds
    var fees: Funds
    /// Browser data, return URL, descriptor, tag, billing and shipping (the funds and ids in it are not looked at).
    var request: PayInRequest
    var recurringRegistrationId: String?
    var walletNetwork: String?
    var walletTransactionId: String?
    /// The risk history's card key: the card's fingerprint, or a keyed hash of the wallet token's transaction id.
    var fingerprint: String
    var cardInfo: CardInfo
    /// A PayPal pay-in's order: the pay-in then awaits the buyer's approval instead of 3-D Secure.
    var payPal: PayPalOrder? = nil
    /// How the pay-in is authorized, from the risk verdict and the challenge deadline.
    var decide: @Sendable (RiskAssessment, Date) -> PayInStateMachine.Authorization
}

extension PayInService {
    /// Scores, authorizes and persists a prepared pay-in in one batch with `extraWrites(payIn)` (the registration's
    /// change and the events), which is called once the authorization's outcome is known.
    func createLinked(
        clientId: String, _ linked: LinkedPayIn,
        extraWrites: (PayIn) async throws -> [RecordWrite]
    ) async throws -> PayIn {
        let now = environment.nowSeconds
        let request = linked.request
        let attempt = try await profilingAttempt(clientId: clientId, reference: request.profilingAttemptReference)
        let ipAddress = request.ipAddress ?? attempt?.ipAddress
        let deviceId = try PayInRiskHistory.deviceId(
            of: attempt, clientId: clientId, keys: environment.fingerprintKeys)
        // The IP dimension is the address's keyed hash, as for direct pay-ins (no address in clear in a record id).
        let keys = PayInRiskHistory.Keys(
            fingerprint: linked.fingerprint, userId: linked.authorId,
            ipAddress: try PayInRiskHistory.ipKey(ipAddress, clientId: clientId, environment: environment),
            deviceId: deviceId)
        var signals = try await history.signals(
            clientId: clientId, keys: keys, amount: linked.debited.amount, currency: linked.debited.currency, now: now)
        if let card = linked.card {
            signals.cardCountry = environment.configuration.countryTable.country(forBIN: card.alias)
        }
        signals.ipCountry = ipAddress.flatMap { environment.configuration.countryTable.country(forIP: $0) }
        let risk = riskEngine.assess(signals)
        let deadline = environment.clock.now.addingTimeInterval(TimeInterval(sandbox.challengeWindowSeconds))
        let authorization = linked.decide(risk, deadline)
        let secureMode = SecureMode(rawValue: request.secureMode ?? "DEFAULT") ?? .default

        var payIn = PayIn(
            id: Identifier.make("payin_", random: environment.random), clientId: clientId,
            machine: PayInStateMachine(
                purpose: .payIn, redirect: linked.payPal == nil ? .threeDSecure : .payPalApproval),
            authorId: linked.authorId,
            creditedUserId: linked.creditedUserId, creditedWalletId: linked.wallet.id, debitedFunds: linked.debited,
            fees: linked.fees, cardId: linked.card?.id ?? "", cardInfo: linked.cardInfo, secureMode: secureMode,
            secureModeReturnURL: request.secureModeReturnURL ?? "", secureModeNeeded: false, challengeSecret: nil,
            ipAddress: request.ipAddress, browserInfo: request.browserInfo,
            statementDescriptor: request.statementDescriptor, tag: request.tag, billing: request.billing,
            shipping: request.shipping, culture: request.culture,
            profilingAttemptReference: request.profilingAttemptReference,
            preferredCardNetwork: request.preferredCardNetwork, paymentCategory: request.paymentCategory, risk: risk,
            fingerprint: linked.fingerprint, deviceId: deviceId, creationDate: now, executionDate: nil, refunded: 0,
            refundedFees: nil, kind: linked.kind.rawValue, recurringRegistrationId: linked.recurringRegistrationId,
            walletNetwork: linked.walletNetwork, walletTransactionId: linked.walletTransactionId)
        payIn.payPal = linked.payPal
        let outcome: PayInStateMachine.Outcome
        do {
            outcome = try payIn.machine.handle(.authorize(authorization))
        } catch {
            throw PaymentsError(.invalidState, "The transaction could not be authorized")
        }
        guard case .transitioned(let actions) = outcome else {
            throw PaymentsError(.invalidState, "The transaction could not be authorized")
        }
        var extra = PayInRiskHistory.attemptWrites(clientId: clientId, keys: keys, transactionId: payIn.id, now: now)
        extra += TransactionIndex.writes(for: payIn)
        if let card = linked.card {
            extra.append(
                .put(
                    collection: Self.byCard, id: Identifier.indexed(clientId, card.id, payIn.id),
                    value: Array(PayInStateMachine.Purpose.payIn.rawValue.utf8), condition: .absent))
        }
        if actions.contains(.presentChallenge) {
            payIn.secureModeNeeded = true
            payIn.challengeSecret = Identifier.secret(count: 32, random: environment.random)
            extra.append(
                .put(
                    collection: Self.awaiting, id: Self.awaitingId(payIn),
                    value: Array(String(Int64(deadline.timeIntervalSince1970)).utf8), condition: .absent))
        }
        // PAYIN_NORMAL_CREATED and the final event come from `apply`, as for every pay-in.
        extra += try await extraWrites(payIn)
        payIn = try await apply(
            actions, to: payIn, previousVersion: nil, extra: extra, keys: keys, cardValidity: linked.card?.validity)
        if environment.logger.minimumLevel <= .info {
            environment.logger.info(
                "pay-in created",
                [
                    "clientId": .string(clientId), "transactionId": .string(payIn.id),
                    "kind": .string(linked.kind.rawValue),
                    "status": .string(payIn.status), "riskScore": .int(risk.score),
                    "riskDecision": .string(risk.decision.rawValue),
                ])
        }
        return payIn
    }

    /// The writes that go with a pay-in's 3-D Secure completion (or expiry) besides the pay-in itself (whose events
    /// `apply` writes): for a recurring CIT, its registration's change and event.
    func completionWrites(for payIn: PayIn) async throws -> [RecordWrite] {
        guard payIn.payInKind != nil else { return [] }
        var writes: [RecordWrite] = []
        if let registrationId = payIn.recurringRegistrationId,
            let stored = try await readRegistration(clientId: payIn.clientId, id: registrationId)
        {
            var registration = stored.value
            let initiator: RecurringRegistrationStateMachine.Initiator =
                payIn.payInKind?.isMerchantInitiated == true ? .merchant : .customer
            writes += try await registrationWrites(
                &registration, version: stored.version, for: payIn, initiator: initiator)
        }
        return writes
    }

    /// Records the outcome of linked pay-in `payIn` on `registration` (state, totals, last result) and returns the
    /// registration's write (at `version`) with the event of its new state, if it changed.
    func registrationWrites(
        _ registration: inout RecurringRegistration, version: UInt64?,
        for payIn: PayIn, initiator: RecurringRegistrationStateMachine.Initiator
    ) async throws -> [RecordWrite] {
        let event: RecurringRegistrationStateMachine.Event
        switch payIn.machine.state {
        case .succeeded:
            event = .succeeded(initiator)
            registration.cumulatedDebitedAmount = try Self.checked(
                registration.cumulatedDebitedAmount.addingReportingOverflow(payIn.debitedFunds.amount),
                "DebitedFunds.Amount")
            registration.cumulatedFeesAmount = try Self.checked(
                registration.cumulatedFeesAmount.addingReportingOverflow(payIn.fees.amount), "Fees.Amount")
            registration.result = nil
        case .failed(let result):
            event = .failed(initiator, result)
            registration.result = result
        case .awaitingChallenge:
            event = .authenticationPending
        case .created:
            return []
        }
        var writes: [RecordWrite] = []
        if case .transitioned(let state) = try? registration.machine.handle(event) {
            writes += try await EventLog.writes(
                Self.eventType(state), resourceId: registration.id, clientId: registration.clientId,
                environment: environment)
        }
        writes.append(
            .put(
                collection: Collections.recurringRegistrations,
                id: Identifier.scoped(registration.clientId, registration.id),
                value: try RecordCoding.encode(registration), condition: version.map { .version($0) } ?? .absent))
        return writes
    }

    static func eventType(_ state: RecurringRegistrationStateMachine.State) -> EventType {
        switch state {
        case .created: .recurringRegistrationCreated
        case .authenticationNeeded: .recurringRegistrationAuthNeeded
        case .inProgress: .recurringRegistrationInProgress
        case .ended: .recurringRegistrationEnded
        }
    }

    func readRegistration(clientId: String, id: String) async throws -> Stored<RecurringRegistration>? {
        guard Identifier.isWellFormed(id) else { return nil }
        return try await environment.store.read(
            RecurringRegistration.self, Collections.recurringRegistrations, id: Identifier.scoped(clientId, id))
    }
}
