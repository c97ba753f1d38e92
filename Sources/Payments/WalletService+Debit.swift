import VaultCore
public import VaultStore

extension WalletService {
    /// Debits `amount` from wallet `walletId` when its balance covers it, in one atomic batch with the writes
    /// `along` builds from the wallet read and whether it is debited; a wallet without the funds is not written.
    ///
    /// Takes the wallet's turn as credits and refunds do, and runs again on a version conflict.
    /// - Returns: the wallet as read and whether it was debited.
    /// - Throws: ``PaymentsError`` `.notFound` for an unknown wallet, `.concurrentChange` when it kept changing.
    public func debit(
        clientId: String, walletId: String, amount: Int64,
        along: (_ wallet: Wallet, _ debited: Bool) async throws -> [RecordWrite]
    ) async throws -> (wallet: Wallet, debited: Bool) {
        try await retryingOnConflict(
            attempts: 10,
            exhausted: PaymentsError(
                .concurrentChange, "The wallet kept changing under this debit; nothing was written")
        ) {
            let key = Identifier.scoped(clientId, walletId)
            let turn = await environment.walletTurns.take(key)
            defer { turn.finish(failed: false) }
            let handed = turn.latest
            guard let found = try await (handed == nil ? read(clientId: clientId, id: walletId) : handed) else {
                throw PaymentsError.notFound("Wallet", id: walletId)
            }
            let wallet = found.value
            let version = found.version
            let left = wallet.balance.subtractingReportingOverflow(amount)
            let debited = amount >= 0 && !left.overflow && left.partialValue >= 0
            var writes = try await along(wallet, debited)
            var changed = wallet
            changed.balance = left.partialValue
            if debited {
                writes.append(
                    .put(
                        collection: Collections.wallets, id: key, value: try RecordCoding.encode(changed),
                        condition: .version(version)))
            }
            let handing = debited ? Stored(value: changed, version: version + 1) : nil
            do {
                try await mapStoreErrors {
                    try await environment.store.commit(
                        writes, whenQueued: { queued in turn.hand(queued ? handing : nil) })
                }
            } catch let error as StoreError where error.code == .conflict {
                await turn.settle()  // the next attempt reads what the change this one built on left
                throw error
            }
            return (wallet, debited)
        }
    }
}
