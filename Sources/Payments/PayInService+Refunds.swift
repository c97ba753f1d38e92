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
    /// Refunds all or part of a succeeded pay-in: the wallet is debited by the refund's `DebitedFunds`, in
    /// the same atomic batch that records the refund and what is left to refund. A wallet without the funds
    /// gives a FAILED refund (001001) and moves nothing.
    /// - Throws: ``PaymentsError`` `.invalidParameters` for amounts above what is left, other currencies or a
    ///   pay-in that did not succeed; `.notFound` for an unknown pay-in.
    public func refund(clientId: String, payInId: String, request: RefundRequest) async throws -> Refund {
        for _ in 0..<10 {
            guard let found = try await read(clientId: clientId, id: payInId, purpose: .payIn) else {
                throw PaymentsError.notFound("PayIn", id: payInId)
            }
            let payIn = found.value
            let payInVersion = found.version
            var rules = FieldRules()
            rules.length(request.tag, "Tag")
            guard payIn.machine.state == .succeeded else {
                throw PaymentsError.invalid("PayInId", "Only a SUCCEEDED pay-in can be refunded.")
            }
            let left = payIn.debitedFunds.amount - payIn.refunded
            let amount = request.debitedFunds?.amount ?? left
            let currency = payIn.debitedFunds.currency
            if let funds = request.debitedFunds, funds.currency != currency {
                rules.fail("DebitedFunds.Currency", "The currency must be the pay-in's (\(currency)).")
            }
            if amount <= 0 { rules.fail("DebitedFunds.Amount", "The amount must be positive.") }
            if amount > left {
                rules.fail("DebitedFunds.Amount", "The amount is above what is left to refund (\(left)).")
            }
            let fees = request.fees?.amount ?? 0
            if let funds = request.fees, funds.currency != currency {
                rules.fail("Fees.Currency", "The currency must be the pay-in's (\(currency)).")
            }
            if fees > 0 || -fees > payIn.fees.amount {
                rules.fail("Fees.Amount", "Refund fees must be between -\(payIn.fees.amount) and 0.")
            }
            try rules.check()
            guard let walletId = payIn.creditedWalletId,
                let storedWallet = try await wallets.read(clientId: clientId, id: walletId)
            else { throw PaymentsError(.invalidState, "The credited wallet no longer exists") }
            let wallet = storedWallet.value
            let walletVersion = storedWallet.version

            let now = environment.nowSeconds
            let funded = wallet.balance >= amount
            let refund = Refund(
                id: Identifier.make("refund_", random: environment.random), clientId: clientId, payInId: payIn.id,
                authorId: request.authorId ?? payIn.authorId, creditedUserId: payIn.authorId, debitedWalletId: walletId,
                debitedFunds: Funds(currency: currency, amount: amount), fees: Funds(currency: currency, amount: fees),
                status: funded ? "SUCCEEDED" : "FAILED", result: funded ? .success : .insufficientBalance,
                tag: request.tag, creationDate: now, executionDate: funded ? now : nil)
            var writes: [RecordWrite] = [
                .put(collection: Self.refunds, id: Identifier.scoped(clientId, refund.id),
                     value: try RecordCoding.encode(refund), condition: .absent),
                .put(collection: Self.refundsByPayIn, id: Identifier.indexed(clientId, payIn.id, refund.id),
                     value: [], condition: .unconditional),
            ]
            if funded {
                var refundedPayIn = payIn
                refundedPayIn.refunded += amount
                var debitedWallet = wallet
                debitedWallet.balance -= amount
                writes += [
                    .put(collection: Self.payIns, id: Identifier.scoped(clientId, payIn.id),
                         value: try RecordCoding.encode(refundedPayIn), condition: .version(payInVersion)),
                    .put(collection: Collections.wallets, id: Identifier.scoped(clientId, walletId),
                         value: try RecordCoding.encode(debitedWallet), condition: .version(walletVersion)),
                ]
            }
            do {
                try await mapStoreErrors { try await environment.store.commit(writes) }
                environment.logger.info(
                    "refund", ["clientId": .string(clientId), "refundId": .string(refund.id), "status": .string(refund.status)])
                return refund
            } catch let error as StoreError where error.code == .conflict {
                continue
            }
        }
        throw PaymentsError(.unavailable, "The pay-in is being changed by another request; retry")
    }

    /// The refund `id` of `clientId`.
    public func refund(clientId: String, id: String) async throws -> Refund {
        guard Identifier.isWellFormed(id),
            let refund = try await environment.store.read(Refund.self, Self.refunds, id: Identifier.scoped(clientId, id))
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
