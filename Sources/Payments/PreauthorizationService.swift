import Foundation
import VaultCore
import VaultStore

/// What a merchant sends to capture a preauthorization (`POST /payins/PreAuthorized/direct`) or a deposit
/// (`POST /payins/deposit-preauthorized/direct/full-capture`).
public struct CaptureRequest: Sendable, Equatable {
    public var authorId: String?
    public var creditedUserId: String?
    public var creditedWalletId: String?
    /// `PreauthorizationId` or `DepositId`.
    public var holdId: String?
    public var debitedFunds: Funds?
    public var fees: Funds?
    public var tag: String?
    public var statementDescriptor: String?
    public var culture: String?

    public init() {}
}

// The parts of the pay-in machinery that preauthorizations and deposits add: their ids, their holds and the
// events of their authorization, written in the batch of each 3-D Secure transition.
extension PayInService {
    static func idPrefix(_ purpose: PayInStateMachine.Purpose) -> String {
        switch purpose {
        case .payIn: "payin_"
        case .cardValidation: "val_"
        case .preauthorization: "preauth_"
        case .depositPreauthorization: "deposit_"
        }
    }

    /// The resource name of a not-found answer.
    static func resourceName(_ purpose: PayInStateMachine.Purpose) -> String {
        switch purpose {
        case .payIn: "PayIn"
        case .cardValidation: "CardValidation"
        case .preauthorization: "PreAuthorization"
        case .depositPreauthorization: "Deposit"
        }
    }

    /// The letter of a transaction kind in ACS links and sweeper entries.
    static func kind(_ purpose: PayInStateMachine.Purpose) -> String {
        switch purpose {
        case .payIn: "p"
        case .cardValidation: "v"
        case .preauthorization: "a"
        case .depositPreauthorization: "d"
        }
    }

    static func holdKind(_ purpose: PayInStateMachine.Purpose) -> PreauthorizationStateMachine.Kind? {
        switch purpose {
        case .preauthorization: .preauthorization
        case .depositPreauthorization: .deposit
        case .payIn, .cardValidation: nil
        }
    }

    static func purpose(_ kind: PreauthorizationStateMachine.Kind) -> PayInStateMachine.Purpose {
        kind == .preauthorization ? .preauthorization : .depositPreauthorization
    }

    static func newHold(
        _ purpose: PayInStateMachine.Purpose, authorized: Int64, now: Int64
    )
        -> PreauthorizationStateMachine?
    {
        holdKind(purpose).map { PreauthorizationStateMachine(kind: $0, authorized: authorized, now: now) }
    }

    /// The sweeper's entry id of a hold (`a:clientId:id`, `d:clientId:id`).
    static func holdEntryId(_ payIn: PayIn) -> String {
        kind(payIn.machine.purpose) + ":" + payIn.clientId + ":" + payIn.id
    }

    /// A new hold's entry in the expiry list.
    func holdCreationWrites(_ payIn: PayIn) throws -> [RecordWrite] {
        guard let hold = payIn.hold else { return [] }
        return [
            .put(
                collection: Collections.holdsExpiring, id: Self.holdEntryId(payIn),
                value: Array(String(hold.expiresAt).utf8), condition: .absent)
        ]
    }

    /// The events of a transaction's authorization step: creation, then success (and, for a hold, its waiting
    /// payment) or failure. Captures report PAYIN_NORMAL_CREATED and _SUCCEEDED. Pay-ins and validations write
    /// none here.
    func authorizationEventWrites(_ payIn: PayIn, isNew: Bool) async throws -> [RecordWrite] {
        var types: [EventType] = []
        let state = payIn.machine.state
        switch payIn.machine.purpose {
        case .preauthorization:
            if isNew { types.append(.preauthorizationCreated) }
            if state == .succeeded { types += [.preauthorizationSucceeded, .preauthorizationPaymentWaiting] }
            if case .failed = state { types.append(.preauthorizationFailed) }
        case .depositPreauthorization:
            if isNew { types.append(.depositPreauthorizationCreated) }
            if state == .succeeded { types.append(.depositPreauthorizationPaymentWaiting) }
            if case .failed = state { types.append(.depositPreauthorizationFailed) }
        case .payIn:
            guard payIn.capturedFrom != nil, isNew else { return [] }
            types = [.payInNormalCreated]
            if state == .succeeded { types.append(.payInNormalSucceeded) }
        case .cardValidation:
            return []
        }
        return try await EventLog.writes(
            types, resourceId: payIn.id, clientId: payIn.clientId, environment: environment)
    }
}

/// Preauthorizations and deposit preauthorizations: a card authorization (3-D Secure through the pay-ins'
/// machinery: the same policy, risk scoring, sandbox ACS and challenge sweeper) that holds funds for 7 or 30
/// days, then captures (pay-ins that credit a wallet and refund like any other), cancellation and expiry.
/// Each change and its events go into one atomic store batch.
public struct PreauthorizationService: Sendable {
    let payIns: PayInService

    public init(payIns: PayInService) {
        self.payIns = payIns
    }

    private var environment: PaymentsEnvironment { payIns.environment }

    // MARK: Create and read

    /// Creates a preauthorization (or a deposit) of `request.debitedFunds` on `request.cardId`: validated, scored
    /// and authorized like a direct pay-in, with no wallet; the hold starts waiting.
    public func create(
        clientId: String, request: PayInRequest, kind: PreauthorizationStateMachine.Kind
    ) async throws -> PayIn {
        try await payIns.create(clientId: clientId, request: request, purpose: PayInService.purpose(kind))
    }

    /// The preauthorization (or deposit) `id`; a challenge or a hold past its end is expired first.
    public func get(clientId: String, id: String, kind: PreauthorizationStateMachine.Kind) async throws -> PayIn {
        let payIn = try await payIns.get(clientId: clientId, id: id, purpose: PayInService.purpose(kind))
        return try await expiredIfDue(payIn)
    }

    private func expiredIfDue(_ payIn: PayIn) async throws -> PayIn {
        guard let hold = payIn.hold, hold.paymentStatus == .waiting, environment.nowSeconds >= hold.expiresAt else {
            return payIn
        }
        return try await change(
            clientId: payIn.clientId, id: payIn.id, kind: hold.kind, event: .expire(now: environment.nowSeconds))
    }

    /// Cancels a waiting hold (`PaymentStatus: CANCELED`); cancelling a canceled one changes nothing.
    /// - Throws: ``PaymentsError`` `.invalidParameters` when the hold was captured or expired.
    public func cancel(clientId: String, id: String, kind: PreauthorizationStateMachine.Kind) async throws -> PayIn {
        _ = try await get(clientId: clientId, id: id, kind: kind)
        return try await change(clientId: clientId, id: id, kind: kind, event: .cancel(now: environment.nowSeconds))
    }

    /// The preauthorizations (or deposits) made with card `cardId`, a page at a time.
    public func list(
        clientId: String, cardId: String, kind: PreauthorizationStateMachine.Kind, page: PageRequest
    ) async throws -> Page<PayIn> {
        _ = try await payIns.cards.get(clientId: clientId, id: cardId)
        return page.slice(
            try await holds(clientId: clientId, cardId: cardId, kind: kind), creationDate: \.creationDate, id: \.id)
    }

    /// The preauthorizations (or deposits) of every card of user `userId`, a page at a time.
    public func list(
        clientId: String, userId: String, kind: PreauthorizationStateMachine.Kind, page: PageRequest
    ) async throws -> Page<PayIn> {
        guard try await payIns.users.exists(clientId: clientId, id: userId) else {
            throw PaymentsError.notFound("User", id: userId)
        }
        var items: [PayIn] = []
        let prefix = Identifier.indexed(clientId, userId, "")
        for entry in try await environment.store.scanAll(Collections.cardsByUser, prefix: prefix) {
            items += try await holds(clientId: clientId, cardId: String(entry.id.dropFirst(prefix.count)), kind: kind)
        }
        return page.slice(items, creationDate: \.creationDate, id: \.id)
    }

    private func holds(
        clientId: String, cardId: String, kind: PreauthorizationStateMachine.Kind
    ) async throws
        -> [PayIn]
    {
        let purpose = PayInService.purpose(kind)
        var items: [PayIn] = []
        let prefix = Identifier.indexed(clientId, cardId, "")
        for entry in try await environment.store.scanAll(PayInService.byCard, prefix: prefix)
        where String(decoding: entry.value, as: UTF8.self) == purpose.rawValue {
            if let found = try await payIns.read(
                clientId: clientId, id: String(entry.id.dropFirst(prefix.count)), purpose: purpose)
            {
                let payIn = found.value
                items.append(try await expiredIfDue(payIn))
            }
        }
        return items
    }

    /// The capture pay-ins of a preauthorization (or deposit), a page at a time.
    public func transactions(
        clientId: String, id: String, kind: PreauthorizationStateMachine.Kind, page: PageRequest
    ) async throws -> Page<PayIn> {
        let held = try await get(clientId: clientId, id: id, kind: kind)
        var items: [PayIn] = []
        for capture in held.hold?.captures ?? [] {
            if let found = try await payIns.read(clientId: clientId, id: capture.payInId, purpose: .payIn) {
                let payIn = found.value
                items.append(payIn)
            }
        }
        return page.slice(items, creationDate: \.creationDate, id: \.id)
    }

    // MARK: Capture

    /// Captures `request.debitedFunds` of a preauthorization (for a deposit: all of it) as a pay-in that credits
    /// `request.creditedWalletId`. The pay-in, the wallet credit, the hold's new remaining funds and the events
    /// commit in one batch. `multiCapture`: the request carried an `Idempotency-Key`; without one, the first
    /// capture is the only one.
    /// `step`: for a deposit, the full capture a complement will follow, or that complement (`DebitedFunds`
    /// required, any positive amount beyond the hold).
    /// - Throws: ``PaymentsError`` `.invalidParameters` naming the wrong field (above the remaining funds, an
    ///   expired, canceled or not-authorized hold, another currency, ...).
    public func capture(
        clientId: String, request: CaptureRequest, kind: PreauthorizationStateMachine.Kind, multiCapture: Bool,
        step: PreauthorizationStateMachine.CaptureStep = .capture
    ) async throws -> PayIn {
        let holdField = kind == .preauthorization ? "PreauthorizationId" : "DepositId"
        var rules = FieldRules()
        rules.required(request.authorId, "AuthorId", maximum: 100)
        rules.required(request.creditedWalletId, "CreditedWalletId", maximum: 100)
        rules.required(request.holdId, holdField, maximum: 100)
        if kind == .preauthorization || request.debitedFunds != nil || step == .complement {
            rules.funds(request.debitedFunds, "DebitedFunds", allowZero: false)
        }
        if kind == .preauthorization || request.fees != nil {
            rules.funds(request.fees, "Fees", allowZero: true)
        }
        rules.length(request.tag, "Tag")
        try rules.check()
        let holdId = request.holdId!
        let purpose = PayInService.purpose(kind)
        guard let first = try await payIns.read(clientId: clientId, id: holdId, purpose: purpose) else {
            throw PaymentsError.invalid(holdField, "The \(holdField) \(Identifier.printable(holdId)) does not exist.")
        }
        _ = try await expiredIfDue(first.value)
        guard let wallet = try await payIns.wallets.read(clientId: clientId, id: request.creditedWalletId!)?.value
        else {
            throw PaymentsError.invalid(
                "CreditedWalletId", "The wallet \(Identifier.printable(request.creditedWalletId!)) does not exist.")
        }
        return try await retryingOnConflict(
            attempts: 10,
            exhausted: PaymentsError(
                .concurrentChange, "The hold or its wallet kept changing under this capture; nothing was written")
        ) {
            guard let found = try await payIns.read(clientId: clientId, id: holdId, purpose: purpose),
                var hold = found.value.hold
            else { throw PaymentsError.invalid(holdField, "The \(holdField) does not exist.") }
            let held = found.value
            let currency = held.debitedFunds.currency
            let debited = request.debitedFunds ?? Funds(currency: currency, amount: hold.authorized)
            let fees = request.fees ?? Funds(currency: currency, amount: 0)
            if request.authorId != held.authorId {
                rules.fail("AuthorId", "The AuthorId must be the author of the \(holdField).")
            }
            if debited.currency != currency {
                rules.fail("DebitedFunds.Currency", "The currency must be the held funds' (\(currency)).")
            }
            if wallet.currency != currency {
                rules.fail("CreditedWalletId", "The credited wallet's currency must be the held funds' (\(currency)).")
            }
            if fees.currency != currency { rules.fail("Fees.Currency", "The Fees currency must be \(currency).") }
            if fees.amount > debited.amount { rules.fail("Fees.Amount", "The Fees cannot be above the DebitedFunds.") }
            if let credited = request.creditedUserId, credited != wallet.ownerId {
                rules.fail("CreditedUserId", "The CreditedUserId must be the owner of the credited wallet.")
            }
            try rules.check()

            let now = environment.nowSeconds
            let payInId = Identifier.make("payin_", random: environment.random)
            let holdActions: [PreauthorizationStateMachine.Action]
            do {
                let outcome = try hold.handle(
                    .capture(
                        payInId: payInId, amount: debited.amount, multiCapture: multiCapture,
                        authorized: held.machine.state == .succeeded, now: now, step: step))
                guard case .transitioned(let actions) = outcome else {
                    throw PaymentsError(.invalidState, "The capture changed nothing")
                }
                holdActions = actions
            } catch {
                throw Self.refusal(error, field: holdField)
            }
            var capture = PayIn(
                id: payInId, clientId: clientId, machine: PayInStateMachine(purpose: .payIn), authorId: held.authorId,
                creditedUserId: request.creditedUserId ?? wallet.ownerId, creditedWalletId: wallet.id,
                debitedFunds: debited, fees: fees, cardId: held.cardId, cardInfo: held.cardInfo,
                secureMode: held.secureMode, secureModeReturnURL: held.secureModeReturnURL, secureModeNeeded: false,
                challengeSecret: nil, ipAddress: held.ipAddress, browserInfo: held.browserInfo,
                statementDescriptor: request.statementDescriptor ?? held.statementDescriptor, tag: request.tag,
                billing: held.billing, shipping: held.shipping, culture: request.culture ?? held.culture,
                profilingAttemptReference: nil, preferredCardNetwork: held.preferredCardNetwork,
                paymentCategory: held.paymentCategory, risk: held.risk, fingerprint: held.fingerprint,
                deviceId: held.deviceId, creationDate: now, executionDate: nil, refunded: 0, refundedFees: nil)
            capture.capturedFrom = CaptureSource(kind: kind, id: held.id)
            guard case .transitioned(let actions) = try capture.machine.handle(.authorize(.frictionless)) else {
                throw PaymentsError(.invalidState, "The capture could not be made")
            }
            var updated = held
            updated.hold = hold
            var extra: [RecordWrite] = [
                .put(
                    collection: PayInService.collection(purpose), id: Identifier.scoped(clientId, held.id),
                    value: try RecordCoding.encode(updated), condition: .version(found.version)),
                .put(
                    collection: PayInService.byCard, id: Identifier.indexed(clientId, held.cardId, payInId),
                    value: Array(PayInStateMachine.Purpose.payIn.rawValue.utf8), condition: .unconditional),
            ]
            extra += try await holdWrites(holdActions, of: updated)
            let made = try await payIns.apply(
                actions, to: capture, previousVersion: nil, extra: extra, conflictEndsAttempt: true)
            environment.logger.info(
                "hold captured",
                [
                    "clientId": .string(clientId), "holdId": .string(held.id), "transactionId": .string(made.id),
                    "remaining": .int(Int(hold.remaining)),
                ])
            return made
        }
    }

    // MARK: Changes of the hold alone

    /// Applies `event` (cancel, expire) to the stored hold, retrying on concurrent changes.
    private func change(
        clientId: String, id: String, kind: PreauthorizationStateMachine.Kind,
        event: PreauthorizationStateMachine.Event
    ) async throws -> PayIn {
        let purpose = PayInService.purpose(kind)
        return try await retryingOnConflict(
            attempts: 10,
            exhausted: PaymentsError(
                .concurrentChange, "The hold kept changing under this request; nothing was written")
        ) {
            guard let found = try await payIns.read(clientId: clientId, id: id, purpose: purpose),
                var hold = found.value.hold
            else { throw PaymentsError.notFound(PayInService.resourceName(purpose), id: id) }
            let outcome: PreauthorizationStateMachine.Outcome
            do {
                outcome = try hold.handle(event)
            } catch {
                throw Self.refusal(error, field: "PaymentStatus")
            }
            guard case .transitioned(let actions) = outcome else { return found.value }
            var updated = found.value
            updated.hold = hold
            var writes: [RecordWrite] = [
                .put(
                    collection: PayInService.collection(purpose), id: Identifier.scoped(clientId, id),
                    value: try RecordCoding.encode(updated), condition: .version(found.version))
            ]
            writes += try await holdWrites(actions, of: updated)
            try await mapStoreErrors { try await environment.store.commit(writes) }
            environment.logger.info(
                "hold changed",
                [
                    "clientId": .string(clientId), "holdId": .string(id),
                    "paymentStatus": .string(hold.paymentStatus.rawValue),
                ])
            return updated
        }
    }

    /// The writes of a hold's actions besides the hold itself: its expiry entry removed, its events.
    private func holdWrites(
        _ actions: [PreauthorizationStateMachine.Action], of payIn: PayIn
    ) async throws -> [RecordWrite] {
        var writes: [RecordWrite] = []
        for action in actions {
            switch action {
            case .stopExpiry:
                writes.append(
                    .delete(
                        collection: Collections.holdsExpiring, id: PayInService.holdEntryId(payIn),
                        condition: .unconditional))
            case .emit(let type):
                writes += try await EventLog.writes(
                    type, resourceId: payIn.id, clientId: payIn.clientId, environment: environment)
            case .persist, .creditCapture:
                continue
            }
        }
        return writes
    }

    static func refusal(_ error: any Error, field: String) -> any Error {
        guard let refusal = error as? PreauthorizationStateMachine.Refusal else { return error }
        switch refusal {
        case .notAuthorized:
            return PaymentsError.invalid(field, "The authorization did not succeed: no funds are held.")
        case .notWaiting(let status):
            return PaymentsError.invalid(
                field, "The PaymentStatus is \(status.rawValue): the hold cannot take this step.")
        case .expired:
            return PaymentsError.invalid(field, "The hold has expired.")
        case .amountNotPositive:
            return PaymentsError.invalid("DebitedFunds.Amount", "The amount must be positive.")
        case .aboveRemaining(let remaining):
            return PaymentsError.invalid(
                "DebitedFunds.Amount", "The amount is above the remaining funds (\(remaining)).")
        case .fullCaptureRequired(let amount):
            return PaymentsError.invalid(
                "DebitedFunds.Amount", "A deposit is captured in full: the amount must be \(amount).")
        case .multiCaptureNeedsIdempotencyKey:
            return PaymentsError.invalid(
                "Idempotency-Key", "A further capture of a multi-captured preauthorization needs an Idempotency-Key.")
        case .complementOfAPreauthorization:
            return PaymentsError.invalid(field, "Only a deposit preauthorization is captured with a complement.")
        }
    }

    // MARK: Expiry

    /// Expires every waiting hold whose expiration date has passed (a round of the record sweeper). A hold that
    /// cannot move now is logged and retried on the next round; an entry whose hold is gone is dropped.
    /// - Returns: how many holds expired.
    @discardableResult
    public func expireDueHolds() async throws -> Int {
        let now = environment.nowSeconds
        var expired = 0
        for entry in try await environment.store.scanAll(Collections.holdsExpiring) {
            guard let deadline = Int64(String(decoding: entry.value, as: UTF8.self)), deadline <= now else { continue }
            let parts = entry.id.split(separator: ":", maxSplits: 2).map(String.init)
            guard parts.count == 3, let purpose = PayInService.purpose(kind: parts[0]),
                let kind = PayInService.holdKind(purpose)
            else { continue }
            do {
                let payIn = try await change(clientId: parts[1], id: parts[2], kind: kind, event: .expire(now: now))
                if payIn.hold?.paymentStatus == .expired { expired += 1 }
                if payIn.hold?.paymentStatus != .waiting {
                    // Already final by another path: the entry has no more use.
                    _ = try? await environment.store.commit(
                        [.delete(collection: Collections.holdsExpiring, id: entry.id, condition: .unconditional)])
                }
            } catch let error as PaymentsError where error.code == .notFound {
                _ = try? await environment.store.commit(
                    [.delete(collection: Collections.holdsExpiring, id: entry.id, condition: .unconditional)])
            } catch {
                environment.logger.warning(
                    "hold expiry postponed",
                    ["holdId": .string(parts[2]), "error": .string(String(describing: type(of: error)))])
            }
        }
        return expired
    }
}
