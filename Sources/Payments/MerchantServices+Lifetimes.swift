import Foundation
import Risk
import VaultCore
import VaultCrypto
public import VaultStore

extension MerchantServices {
    /// The lifetime of every collection the merchant API writes (see ``RecordLifetime``), with the settings of
    /// ``PaymentsConfiguration``.
    public var recordLifetimes: [RecordLifetime] {
        let configuration = environment.configuration
        let idempotencyRetention = configuration.idempotencyRetention
        let tokenExpiry: @Sendable (Record) throws -> Int64 = {
            try RecordCoding.decode(BearerTokens.Entry.self, from: $0).expiresAt
        }
        let idempotencyExpiry: @Sendable (Record) throws -> Int64 = {
            IdempotencyLedger.expiry(
                of: try RecordCoding.decode(IdempotencyLedger.Entry.self, from: $0), retention: idempotencyRetention)
        }
        let accessKeyLifetime = configuration.accessKeyLifetime
        let registrationLifetime = Int64(configuration.registrationLifetime)
        let profilingRetention = Int64(configuration.profilingAttemptRetention)
        let riskWindow = Int64(payIns.riskEngine.policy.windowSeconds)
        let historyRetention = Int64(configuration.riskHistoryRetention)
        let eventRetention = Int64(configuration.eventRetention)
        // Records written before secret and personal ids were keyed move to their keyed ids (see KeyedRecordIds).
        let recordIds = try? environment.recordIds
        let rekeyScoped: @Sendable (String) -> String? = { recordIds?.rekeyedScopedId($0) }
        let rekeyRisk: @Sendable (String) -> String? = { id in
            recordIds.flatMap { PayInRiskHistory.rekeyedId(id, recordIds: $0) }
        }
        return [
            RecordLifetime(kept: Collections.clients, "until the operator removes the client"),
            .deleted(Collections.bearerTokens, "until the token expires (bearerTokenLifetime, 1 hour)", at: tokenExpiry)
                .indexed(by: BearerTokens.deadlines) { record, _ in try tokenExpiry(record) },
            RecordLifetime(
                kept: Collections.bearerTokenDeadlines,
                "until its token's expiry: the sweeper then deletes the token and drops the entry"),
            .deleted(
                Collections.idempotency, "24 hours after the first request (idempotencyRetention)",
                at: idempotencyExpiry
            ).movingClearIds(rekeyScoped).indexed(by: IdempotencyLedger.deadlines) { record, _ in
                try idempotencyExpiry(record)
            },
            RecordLifetime(
                kept: Collections.idempotencyDeadlines,
                "until its entry's expiry: the sweeper then deletes the entry and drops the index entry"),
            RecordLifetime(
                Collections.registrations,
                "not VALIDATED: 24 hours after creation (registrationLifetime); a tokenized card number goes at the "
                    + "access key's expiry (accessKeyLifetime, 20 minutes)"
            ) { record, now in
                try Self.expireRegistration(
                    record, now: now, accessKeyLifetime: accessKeyLifetime, registrationLifetime: registrationLifetime)
            }.indexed(by: CardRegistrationService.deadlines) { record, now in
                CardRegistrationService.deadline(
                    of: try RecordCoding.decode(CardRegistration.self, from: record), now: now,
                    accessKeyLifetime: accessKeyLifetime, registrationLifetime: registrationLifetime)
            },
            RecordLifetime(
                kept: Collections.registrationDeadlines,
                "until its registration's deadline: the sweeper then takes the registration forward and moves the "
                    + "entry to its next deadline, or drops it"),
            RecordLifetime(
                kept: Collections.vault,
                "with its card; a number tokenized but never completed goes at the access key's expiry"),
            .deleted(Collections.profilingAttempts, "7 days after the tokenization (profilingAttemptRetention)") {
                record in
                try RecordCoding.decode(ProfilingAttempt.self, from: record).creationDate + profilingRetention
            }.sweptEvery(RecordLifetime.longLivedSweepSeconds),
            RecordLifetime(kept: Collections.users, "until the merchant's data is removed"),
            RecordLifetime(kept: Collections.wallets, "until the merchant's data is removed"),
            RecordLifetime(kept: Collections.walletsByUser, "with its wallet"),
            RecordLifetime(kept: Collections.cards, "until the merchant's data is removed (deactivation keeps it)"),
            RecordLifetime(kept: Collections.cardsByUser, "with its card"),
            RecordLifetime(kept: Collections.cardsByFingerprint, "with its card"),
            RecordLifetime(kept: PayInService.payIns, "until the merchant's data is removed"),
            RecordLifetime(kept: Collections.webPayIns, "until the merchant's data is removed"),
            RecordLifetime(kept: PayInService.validations, "until the merchant's data is removed"),
            RecordLifetime(kept: PayInService.refunds, "until the merchant's data is removed"),
            RecordLifetime(kept: PayInService.byCard, "with its transaction"),
            RecordLifetime(kept: PayInService.refundsByPayIn, "with its refund"),
            RecordLifetime(kept: PayInService.assessments, "with its pay-in"),
            RecordLifetime(
                kept: Collections.preauthorizations,
                "until the merchant's data is removed (the hold itself ends: captured, canceled or expired after 7 days)"
            ),
            RecordLifetime(
                kept: Collections.depositPreauthorizations,
                "until the merchant's data is removed (the hold itself ends: captured, canceled or expired after 30 days)"
            ),
            .deleted(
                Collections.holdsExpiring,
                "until the hold's expiration date; the sweeper expires the hold, which removes the entry"
            ) { record in
                // Normally ended by the hold's capture, cancellation or expiry; an entry a day past its date is dropped.
                Int64(String(decoding: record.value, as: UTF8.self)).map { $0 + 86_400 }
            },
            RecordLifetime(
                kept: Collections.recurringRegistrations, "until the merchant's data is removed (ENDED ones too)"),
            RecordLifetime(kept: Collections.transactionsByUser, "with its transaction"),
            RecordLifetime(kept: Collections.transactionsByWallet, "with its transaction"),
            .deleted(Collections.cardErasures, "1 year after the erasure (the audit trail of closed users' cards)") {
                record in try RecordCoding.decode(CardErasure.self, from: record).erasedAt + 365 * 86_400
            }.sweptEvery(RecordLifetime.longLivedSweepSeconds),
            .deleted(
                PayInService.awaiting,
                "until the challenge's deadline; the sweeper expires the transaction, which removes the entry"
            ) { record in
                // Normally ended by the transaction's own expiry (a round of the sweeper); an entry a day past its
                // deadline is dropped whatever happened to its transaction.
                Int64(String(decoding: record.value, as: UTF8.self)).map { $0 + 86_400 }
            },
            .deleted(PayInRiskHistory.attempts, "the risk rules' window (RiskPolicy.windowSeconds, 1 hour)") {
                record in Self.riskStamp(record.id).map { $0 + riskWindow }
            }.movingClearIds(rekeyRisk),
            .deleted(PayInRiskHistory.failures, "the risk rules' window (RiskPolicy.windowSeconds, 1 hour)") {
                record in Self.riskStamp(record.id).map { $0 + riskWindow }
            }.movingClearIds(rekeyRisk),
            .deleted(Collections.events, "400 days after the change it reports (eventRetention)") { record in
                try RecordCoding.decode(PaymentEvent.self, from: record).date + eventRetention
            }.sweptEvery(RecordLifetime.longLivedSweepSeconds),
            RecordLifetime(
                kept: Collections.eventOutbox,
                "until the hook delivery engine has taken the event (delivered or given up)"),
            .deleted(PayInRiskHistory.successes, "1 year (riskHistoryRetention): the user's amount history") {
                record in Self.riskStamp(record.id).map { $0 + historyRetention }
            }.movingClearIds(rekeyRisk).sweptEvery(RecordLifetime.longLivedSweepSeconds),
        ]
    }

    /// The pay-ins' challenge deadlines and the holds' expiration dates (the first round), and the in-memory
    /// expiries, for ``RecordSweeper``'s rounds.
    public var sweepRounds: [@Sendable () async throws -> Void] {
        let payIns = self.payIns
        let preauthorizations = self.preauthorizations
        let securityCodes = self.securityCodes
        let bearerTokens = self.bearerTokens
        let logger = environment.logger
        return [
            {
                let expired = try await payIns.expireDueChallenges()
                if expired > 0 { logger.info("expired 3-D Secure challenges", ["count": .int(expired)]) }
                // Holds share the challenges' round: one daemon (the round's leader) sweeps both.
                let holds = try await preauthorizations.expireDueHolds()
                if holds > 0 { logger.info("expired preauthorization holds", ["count": .int(holds)]) }
            },
            {
                securityCodes.purgeExpired()
                bearerTokens.purgeExpiredFromCache()
            },
        ]
    }

    /// A registration that never became VALIDATED: at the access key's expiry its tokenized card number is
    /// deleted (and the pending card forgotten); `registrationLifetime` after creation the registration goes.
    static func expireRegistration(
        _ record: Record, now: Int64, accessKeyLifetime: TimeInterval, registrationLifetime: Int64
    ) throws -> [RecordWrite]? {
        let registration = try RecordCoding.decode(CardRegistration.self, from: record)
        guard registration.status != .validated else { return nil }
        let expiredKey = Double(now - registration.creationDate) > accessKeyLifetime
        var writes: [RecordWrite] = []
        if let pending = registration.pending, expiredKey {
            writes.append(
                .delete(
                    collection: Collections.vault, id: Identifier.scoped(registration.clientId, pending.cardId),
                    condition: .unconditional))
        }
        if now >= registration.creationDate + registrationLifetime {
            writes.append(.delete(collection: record.collection, id: record.id, condition: .version(record.version)))
        } else if !writes.isEmpty {
            var updated = registration
            updated.pending = nil
            writes.append(
                .put(
                    collection: record.collection, id: record.id, value: try RecordCoding.encode(updated),
                    condition: .version(record.version)))
        }
        return writes.isEmpty ? nil : writes
    }

    /// The Unix seconds in a risk history id (`…:<12 digits>:<transactionId>`).
    static func riskStamp(_ id: String) -> Int64? {
        let parts = id.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count >= 2 else { return nil }
        let stamp = parts[parts.count - 2]
        guard stamp.utf8.count == 12, stamp.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(stamp)
    }
}
