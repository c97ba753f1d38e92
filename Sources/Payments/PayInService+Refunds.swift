import VaultCore
import VaultStore

/// What a merchant sends to refund a pay-in; absent funds mean "everything left".
public struct RefundRequest: Sendable, Equatable {
    public var authorId: String?
    public var debitedFunds: Funds?
    public var fees: Funds?
    public var tag: String?

    public init(authorId: String? = nil, debitedFunds: Funds? = nil, fees: Funds? = nil, tag: String? = nil) {
        self.authorId = authorId
        self.debitedFunds = debitedFunds
        self.fees = fees
        self.tag = tag
    }
}

extension PayInService {
    /// Refunds all or part of a succeeded pay-in, as the Mangopay API does:
    ///
    /// - `DebitedFunds` is taken from the credited wallet; together, a pay-in's refunds take at most its
    ///   `CreditedFunds`. Absent, it is everything left.
    /// - `Fees` negative gives fees back to the shopper (together at most the pay-in's `Fees`); positive keeps
    ///   them out of the refunded amount (at most `DebitedFunds`). The card gets `DebitedFunds - Fees`. Absent,
    ///   it is zero, or for a full refund (no funds sent at all) every fee left.
    ///
    /// The wallet debit, the refund and what is left to refund are written in one atomic batch. A wallet without
    /// the funds gives a FAILED refund (001001) and fees given back beyond the pay-in's a FAILED refund (005404);
    /// neither moves anything.
    /// - Throws: ``PaymentsError`` `.invalidParameters` for amounts out of range or above what is left, other
    ///   currencies or a pay-in that did not succeed; `.notFound` for an unknown pay-in.
    public func refund(clientId: String, payInId: String, request: RefundRequest) async throws -> Refund {
        var rules = FieldRules()
        rules.length(request.tag, "Tag")
        // Ranges first: every difference below is then of amounts far inside 64 bits.
        rules.amount(request.debitedFunds?.amount, "DebitedFunds.Amount")
        rules.amount(request.fees?.amount, "Fees.Amount")
        try rules.check()
        return try await retryingOnConflict(
            attempts: 10,
            exhausted: PaymentsError(
                .concurrentChange, "The pay-in or its wallet kept changing under this refund; nothing was written")
        ) {
            guard let found = try await read(clientId: clientId, id: payInId, purpose: .payIn) else {
                throw PaymentsError.notFound("PayIn", id: payInId)
            }
            let payIn = found.value
            let payInVersion = found.version
            guard payIn.machine.state == .succeeded else {
                throw PaymentsError.invalid("PayInId", "Only a SUCCEEDED pay-in can be refunded.")
            }
            let currency = payIn.debitedFunds.currency
            let left = try Self.checked(
                payIn.creditedFunds.amount.subtractingReportingOverflow(payIn.refunded), "DebitedFunds.Amount")
            let feesLeft = try Self.checked(
                payIn.fees.amount.subtractingReportingOverflow(payIn.refundedFees ?? 0), "Fees.Amount")
            let amount = request.debitedFunds?.amount ?? left
            let fees = request.fees?.amount ?? (request.debitedFunds == nil ? -max(0, feesLeft) : 0)
            if let funds = request.debitedFunds, funds.currency != currency {
                rules.fail("DebitedFunds.Currency", "The currency must be the pay-in's (\(currency)).")
            }
            if let funds = request.fees, funds.currency != currency {
                rules.fail("Fees.Currency", "The currency must be the pay-in's (\(currency)).")
            }
            if amount <= 0 {
                rules.fail(
                    "DebitedFunds.Amount", left > 0 ? "The amount must be positive." : "Nothing is left to refund.")
            } else if amount > left {
                rules.fail("DebitedFunds.Amount", "The amount is above what is left to refund (\(left)).")
            }
            if fees > amount { rules.fail("Fees.Amount", "The Fees cannot be above the DebitedFunds.") }
            try rules.check()
            guard let walletId = payIn.creditedWalletId else {
                throw PaymentsError(.invalidState, "The credited wallet no longer exists")
            }
            // The debit takes the wallet's turn as credits do, and reads what the last credit handed on.
            let turn = await walletTurns.take(Identifier.scoped(clientId, walletId))
            defer { turn.finish(failed: false) }
            let handed = turn.latest
            guard let storedWallet = try await (handed == nil ? wallets.read(clientId: clientId, id: walletId) : handed)
            else { throw PaymentsError(.invalidState, "The credited wallet no longer exists") }
            let wallet = storedWallet.value
            let walletVersion = storedWallet.version
            var debitedWallet = wallet

            let feesBack = max(0, -fees)
            let result: ResultCode =
                feesBack > feesLeft
                ? .refundedFeesAboveInitialFees : wallet.balance < amount ? .insufficientBalance : .success
            let now = environment.nowSeconds
            let refund = Refund(
                id: Identifier.make("refund_", random: environment.random), clientId: clientId, payInId: payIn.id,
                authorId: request.authorId ?? payIn.authorId, creditedUserId: payIn.authorId, debitedWalletId: walletId,
                debitedFunds: Funds(currency: currency, amount: amount), fees: Funds(currency: currency, amount: fees),
                status: result == .success ? "SUCCEEDED" : "FAILED", result: result,
                tag: request.tag, creationDate: now, executionDate: result == .success ? now : nil)
            var writes: [RecordWrite] = [
                .put(
                    collection: Self.refunds, id: Identifier.scoped(clientId, refund.id),
                    value: try RecordCoding.encode(refund), condition: .absent),
                .put(
                    collection: Self.refundsByPayIn, id: Identifier.indexed(clientId, payIn.id, refund.id),
                    value: [], condition: .absent),
            ]
            writes += TransactionIndex.writes(for: refund, ownerId: wallet.ownerId)
            writes += try await EventLog.writes(
                [.payInRefundCreated, result == .success ? .payInRefundSucceeded : .payInRefundFailed],
                resourceId: refund.id, clientId: clientId, environment: environment)
            if result == .success {
                var refundedPayIn = payIn
                refundedPayIn.refunded = try Self.checked(
                    payIn.refunded.addingReportingOverflow(amount), "DebitedFunds.Amount")
                if feesBack > 0 {
                    refundedPayIn.refundedFees = try Self.checked(
                        (payIn.refundedFees ?? 0).addingReportingOverflow(feesBack), "Fees.Amount")
                }
                debitedWallet.balance = try Self.checked(
                    wallet.balance.subtractingReportingOverflow(amount), "DebitedFunds.Amount")
                writes += [
                    .put(
                        collection: Self.payIns, id: Identifier.scoped(clientId, payIn.id),
                        value: try RecordCoding.encode(refundedPayIn), condition: .version(payInVersion)),
                    .put(
                        collection: Collections.wallets, id: Identifier.scoped(clientId, walletId),
                        value: try RecordCoding.encode(debitedWallet), condition: .version(walletVersion)),
                ]
            }
            let handing = result == .success ? Stored(value: debitedWallet, version: walletVersion + 1) : nil
            do {
                try await mapStoreErrors {
                    try await environment.store.commit(
                        writes, whenQueued: { queued in turn.hand(queued ? handing : nil) })
                }
            } catch let error as StoreError where error.code == .conflict {
                await turn.settle()  // the next attempt reads what the change this one built on left
                throw error
            }
            environment.logger.info(
                "refund",
                ["clientId": .string(clientId), "refundId": .string(refund.id), "status": .string(refund.status)])
            return refund
        }
    }

    /// The value of a checked operation, or a parameter error naming `field` when it overflowed.
    static func checked(_ result: (partialValue: Int64, overflow: Bool), _ field: String) throws -> Int64 {
        guard !result.overflow else { throw PaymentsError.invalid(field, "The \(field) is out of range.") }
        return result.partialValue
    }

    /// The refund `id` of `clientId`.
    public func refund(clientId: String, id: String) async throws -> Refund {
        guard Identifier.isWellFormed(id),
            let refund = try await environment.store.read(
                Refund.self, Self.refunds, id: Identifier.scoped(clientId, id))
        else { throw PaymentsError.notFound("Refund", id: id) }
        return refund.value
    }

    /// The refunds of pay-in `payInId`, a page at a time.
    public func refunds(clientId: String, payInId: String, page: PageRequest) async throws -> Page<Refund> {
        _ = try await get(clientId: clientId, id: payInId)
        let prefix = Identifier.indexed(clientId, payInId, "")
        var items: [Refund] = []
        for entry in try await environment.store.scanAll(Self.refundsByPayIn, prefix: prefix) {
            items.append(try await refund(clientId: clientId, id: String(entry.id.dropFirst(prefix.count))))
        }
        return page.slice(items, creationDate: \.creationDate, id: \.id)
    }
}
