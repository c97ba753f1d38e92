import Foundation
public import VaultStore

extension CheckoutService {
    /// How long a payment data audit record is kept after its last read (1 year: PCI DSS 10.5.1 keeps audit
    /// history at least that long).
    public static let auditRetentionSeconds: Int64 = 365 * 86_400

    /// The lifetime of every collection the hosted checkout writes (see ``RecordLifetime``).
    public var recordLifetimes: [RecordLifetime] {
        let store = self.store
        let vault = self.vault
        let recordIds = self.recordIds
        let rekey: @Sendable (String) -> String? = { recordIds.rekeyedScopedId($0) }
        let auditRetention = Self.auditRetentionSeconds
        return [
            RecordLifetime(kept: Collection.registrations, "until the merchant unregisters the checkout id"),
            RecordLifetime(kept: Collection.merchants, "until the operator changes the client's flag"),
            RecordLifetime(
                Collection.sessions,
                "until the later of the session's expiry (30 minutes) and its payment data's expiry "
                    + "(validityPeriodMinutes); its transaction pointer goes with it"
            ) { record, now in
                let session = try Self.decode(CheckoutSession.self, record)
                guard Self.endOfSession(session) <= now else { return nil }
                // A checkout without the merchant's userId vaulted its cards for a shopper of its own (see
                // CheckoutCardVault.tokenize): once its payment data has expired nothing may use them.
                if session.request.userId == nil {
                    try await vault.eraseShopper(clientId: session.clientId, shopperReference: session.transactionId)
                }
                return [
                    .delete(collection: record.collection, id: record.id, condition: .version(record.version)),
                    .delete(
                        collection: Collection.transactions,
                        id: recordIds.scoped(session.clientId, session.transactionId),
                        condition: .unconditional),
                ]
            },
            RecordLifetime(Collection.transactions, "with its session") { record, _ in
                // Normally deleted with the session; one whose session is gone (written before sweeping existed,
                // or a crash between the two) is dropped here.
                let sessionId = String(decoding: record.value, as: UTF8.self)
                guard
                    try await store.get(Collection.sessions, id: recordIds.hashed(sessionId, scope: Self.sessionScope))
                        == nil
                else { return nil }
                return [.delete(collection: record.collection, id: record.id, condition: .version(record.version))]
            },
            .deleted(
                Collection.pairingTransactions,
                "until it expires (1 hour), redeemed or not; an unredeemed one takes its waiting card with it"
            ) { record in
                try Self.decode(PairingTransaction.self, record).expiresAt
            },
            RecordLifetime(kept: Collection.wallets, "until the merchant's data is removed").movingClearIds(rekey),
            RecordLifetime(
                kept: Collection.pairings, "until the pairing id rotates (every precheckout and express checkout)"
            ).movingClearIds(rekey),
            .deleted(Collection.audit, "1 year after the transaction's last payment data read") { record in
                let accesses = try Self.decode([PaymentDataAccess].self, record)
                return (accesses.last?.at).map { $0 / 1000 + auditRetention }
            }.movingClearIds(rekey).sweptEvery(RecordLifetime.longLivedSweepSeconds),
        ]
    }

    /// Unix seconds after which nothing can use a session: its page has expired and its payment data too.
    static func endOfSession(_ session: CheckoutSession) -> Int64 {
        let pageEnd = Int64(session.machine.expiresAt.timeIntervalSince1970.rounded(.up))
        return max(pageEnd, session.payment?.expiresAt ?? pageEnd)
    }
}
