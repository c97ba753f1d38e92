import CardKit
import Foundation
import Risk
import Testing
import VaultCore
import VaultCrypto
import VaultStore

@testable import Payments

/// Every kind of record ends at its lifetime, and not before: the real services write, a manual clock moves, the
/// sweeper runs.
@Suite struct RecordLifetimeTests {
    func sweeper(_ f: PaymentsFixture) -> RecordSweeper {
        RecordSweeper(
            store: f.store, clock: f.clock, lifetimes: f.services.recordLifetimes, rounds: f.services.sweepRounds)
    }

    func count(_ f: PaymentsFixture, _ collection: String) async throws -> Int {
        try await f.store.scanAll(collection).count
    }

    @Test func bearerTokensEndAtTheirExpiry() async throws {
        let f = PaymentsFixture()
        let credentials = try await f.services.clients.create(name: "shop")
        let client = try await f.services.clients.authenticate(
            clientId: credentials.clientId, apiKey: credentials.apiKey)
        let issuedAt = Int64(f.clock.now.timeIntervalSince1970)
        let token = try await f.services.bearerTokens.issue(for: client)
        // Filed in the sweeper's index at its expiry, under the token's digest (never the token).
        let lifetime = f.services.environment.configuration.bearerTokenLifetime
        let entries = try await f.store.scanAll(Collections.bearerTokenDeadlines).map(\.id)
        let digest = try #require(try await f.store.scanAll(Collections.bearerTokens).first).id
        #expect(entries == [DeadlineIndex.entryId(at: issuedAt + Int64(lifetime), recordId: digest)])
        #expect(!entries[0].contains(token.accessToken.unsafeRevealed))
        let sweeper = sweeper(f)
        f.clock.advance(by: lifetime - 1)
        try await sweeper.sweep()
        #expect(try await count(f, Collections.bearerTokens) == 1)
        #expect(try await count(f, Collections.bearerTokenDeadlines) == 1)
        #expect(
            try await f.services.bearerTokens.clientId(forToken: token.accessToken.unsafeRevealed) == client.clientId)
        f.clock.advance(by: 1)
        let report = try await sweeper.sweep()
        #expect(report.expired[Collections.bearerTokens] == 1)
        #expect(try await count(f, Collections.bearerTokens) == 0)
        #expect(f.services.bearerTokens.cachedCount == 0)
        #expect(try await count(f, Collections.bearerTokenDeadlines) == 0)
        #expect(try await count(f, Collections.clients) == 1)  // clients are kept
    }

    @Test func theBearerTokenCacheIsBounded() async throws {
        let f = PaymentsFixture(
            configuration: PaymentsConfiguration(publicBaseURL: "https://vault.example", bearerTokenCacheCapacity: 8))
        let credentials = try await f.services.clients.create(name: "shop")
        let client = try await f.services.clients.authenticate(
            clientId: credentials.clientId, apiKey: credentials.apiKey)
        var tokens: [String] = []
        for _ in 0..<50 {
            tokens.append(try await f.services.bearerTokens.issue(for: client).accessToken.unsafeRevealed)
            #expect(f.services.bearerTokens.cachedCount <= 8)
        }
        // A token dropped from the cache still works: it is read from the store again.
        for token in tokens { #expect(try await f.services.bearerTokens.clientId(forToken: token) == client.clientId) }
        #expect(f.services.bearerTokens.cachedCount <= 8)
    }

    @Test func idempotencyEntriesEndAfterTheirRetention() async throws {
        let f = PaymentsFixture()
        let ledger = f.services.idempotency
        let key = "lifetime-key-0001"
        #expect(try await ledger.begin(clientId: "shop", key: key, method: "POST", path: "/x", body: []) == .proceed)
        try await ledger.record(
            clientId: "shop", key: key,
            response: StoredResponse(
                statusCode: 200, contentType: "application/json", body: [], requestURL: "/x", date: 0))
        let sweeper = sweeper(f)
        let entries = { try await f.store.scanAll(Collections.idempotencyDeadlines).map(\.id) }
        let recordId = try #require(try await f.store.scanAll(Collections.idempotency).first).id
        let created = Int64(f.clock.now.timeIntervalSince1970)
        #expect(try await entries() == [DeadlineIndex.entryId(at: created + 24 * 3600, recordId: recordId)])
        f.clock.advance(by: 24 * 3600 - 1)
        try await sweeper.sweep()
        #expect(try await count(f, Collections.idempotency) == 1)
        f.clock.advance(by: 1)
        try await sweeper.sweep()
        #expect(try await count(f, Collections.idempotency) == 0)
        #expect(try await entries().isEmpty)
    }

    /// A key reserved again after its entry expired (before the sweeper deleted it) gets a new expiry: the old
    /// deadline moves the index entry there instead of deleting the entry. An abandoned reservation's entry goes
    /// at its deadline with nothing to delete.
    @Test func idempotencyEntriesFollowTheirLatestReservation() async throws {
        let f = PaymentsFixture()
        let ledger = f.services.idempotency
        let sweeper = sweeper(f)
        try await sweeper.sweep()
        let entries = { try await f.store.scanAll(Collections.idempotencyDeadlines).map(\.id) }
        let start = Int64(f.clock.now.timeIntervalSince1970)
        #expect(
            try await ledger.begin(clientId: "shop", key: "kept-key-0000001", method: "POST", path: "/x", body: [])
                == .proceed)
        #expect(
            try await ledger.begin(clientId: "shop", key: "gone-key-0000001", method: "POST", path: "/x", body: [])
                == .proceed)
        try await ledger.abandon(clientId: "shop", key: "gone-key-0000001")
        #expect(try await entries().count == 2)
        f.clock.advance(by: 24 * 3600 + 10)
        // Expired, not yet swept: the same key proceeds and its entry starts again.
        #expect(
            try await ledger.begin(clientId: "shop", key: "kept-key-0000001", method: "POST", path: "/x", body: [])
                == .proceed)
        let report = try await sweeper.sweep()
        #expect(report.expired[Collections.idempotency] == nil)
        let recordId = try #require(try await f.store.scanAll(Collections.idempotency).first).id
        #expect(try await entries() == [DeadlineIndex.entryId(at: start + 2 * 24 * 3600 + 10, recordId: recordId)])
        f.clock.advance(by: 24 * 3600)
        #expect(try await sweeper.sweep().expired[Collections.idempotency] == 1)
        #expect(try await entries().isEmpty)
        #expect(try await count(f, Collections.idempotency) == 0)
    }

    @Test func anAbandonedRegistrationLosesItsCardNumberAtTheAccessKeysExpiry() async throws {
        let f = PaymentsFixture()
        let abandoned = try await f.registration()
        guard case .success(let token, _) = try await f.tokenize(abandoned, f.form(abandoned)) else {
            Issue.record("tokenization failed")
            return
        }
        let untouched = try await f.registration()
        let card = try await f.registeredCard()
        let sweeper = sweeper(f)
        #expect(try await count(f, Collections.vault) == 2)
        f.clock.advance(by: f.services.environment.configuration.accessKeyLifetime)
        try await sweeper.sweep()
        #expect(try await count(f, Collections.vault) == 2)  // the access key still works this second
        f.clock.advance(by: 1)
        let report = try await sweeper.sweep()
        #expect(report.expired[Collections.registrations] == 1)
        // The abandoned number is gone; the completed card's number stays.
        let numbers = try await f.store.scanAll(Collections.vault).map(\.id)
        #expect(numbers == [Identifier.scoped("shop", card.id)])
        let after = try await f.services.cardRegistrations.get(clientId: "shop", id: abandoned.id)
        #expect(after.pending == nil && after.status == .created)
        // Completing it now fails; the number cannot come back.
        let late = try await f.services.cardRegistrations.update(
            clientId: "shop", id: abandoned.id, registrationData: "data=" + token.unsafeRevealed, cardHolderName: nil,
            tag: nil)
        #expect(late.status == .error && late.result == .tokenInputError)
        #expect(
            try await f.services.cards.list(clientId: "shop", userId: abandoned.userId, page: PageRequest()).items
                .isEmpty)
        // Registrations that never became VALIDATED go after registrationLifetime; the validated one stays.
        f.clock.advance(by: f.services.environment.configuration.registrationLifetime)
        try await sweeper.sweep()
        let left = try await f.store.scanAll(Collections.registrations).map {
            try RecordCoding.decode(CardRegistration.self, from: $0).id
        }
        #expect(!left.contains(abandoned.id) && !left.contains(untouched.id))
        #expect(left.count == 1)
        #expect(try await f.services.cards.get(clientId: "shop", id: card.id).id == card.id)
    }

    /// Each registration is filed in the sweeper's deadline index when it is created; a VALIDATED one leaves the
    /// index at its first deadline, and an open one moves to its next, so the sweeper reads only the due ones.
    @Test func registrationsAreFiledByDeadlineAndAValidatedOneLeavesTheIndex() async throws {
        let f = PaymentsFixture()
        let configuration = f.services.environment.configuration
        let created = Int64(f.clock.now.timeIntervalSince1970)
        let open = try await f.registration()
        let validated = try await f.registration()
        guard case .success(let token, _) = try await f.tokenize(validated, f.form(validated)) else {
            Issue.record("tokenization failed")
            return
        }
        let done = try await f.services.cardRegistrations.update(
            clientId: "shop", id: validated.id, registrationData: "data=" + token.unsafeRevealed, cardHolderName: nil,
            tag: nil)
        #expect(done.status == .validated)
        let keyExpiry = created + Int64(configuration.accessKeyLifetime) + 1
        let entries = { try await f.store.scanAll(Collections.registrationDeadlines).map(\.id) }
        #expect(
            try await entries()
                == [open.id, validated.id].sorted().map {
                    DeadlineIndex.entryId(at: keyExpiry, recordId: Identifier.scoped("shop", $0))
                })
        let sweeper = sweeper(f)
        try await sweeper.sweep()  // the first round reads the kind whole: each entry is where it was
        #expect(try await entries().count == 2)
        f.clock.advance(by: configuration.accessKeyLifetime + 1)
        try await sweeper.sweep()
        #expect(
            try await entries() == [
                DeadlineIndex.entryId(
                    at: created + Int64(configuration.registrationLifetime),
                    recordId: Identifier.scoped("shop", open.id))
            ])
        f.clock.advance(by: configuration.registrationLifetime)
        try await sweeper.sweep()
        #expect(try await entries().isEmpty)
        #expect(try await count(f, Collections.registrations) == 1)
    }

    @Test func aRegistrationsDeadlineFollowsItsState() async throws {
        let f = PaymentsFixture()
        var registration = try await f.registration()
        let created = registration.creationDate
        let deadline = { (now: Int64) in
            CardRegistrationService.deadline(
                of: registration, now: now, accessKeyLifetime: 1200.5, registrationLifetime: 86_400)
        }
        #expect(deadline(created) == created + 1201)  // the key's expiry: a number may still come
        #expect(deadline(created + 1201) == created + 86_400)  // the key has expired, nothing waits
        guard case .success = try await f.tokenize(registration, f.form(registration)) else {
            Issue.record("tokenization failed")
            return
        }
        registration = try await f.services.cardRegistrations.get(clientId: "shop", id: registration.id)
        #expect(registration.pending != nil)
        #expect(deadline(created + 5000) == created + 1201)  // a waiting number goes at the key's expiry: now
        registration.status = .validated
        #expect(deadline(created) == nil)
    }

    @Test func completingAfterTheAccessKeyExpiredFailsEvenBeforeTheSweep() async throws {
        let f = PaymentsFixture()
        let registration = try await f.registration()
        guard case .success(let token, _) = try await f.tokenize(registration, f.form(registration)) else {
            Issue.record("tokenization failed")
            return
        }
        f.clock.advance(by: f.services.environment.configuration.accessKeyLifetime + 1)
        let late = try await f.services.cardRegistrations.update(
            clientId: "shop", id: registration.id, registrationData: "data=" + token.unsafeRevealed,
            cardHolderName: nil, tag: nil)
        #expect(late.status == .error && late.result == .tokenInputError)
        #expect(try await count(f, Collections.vault) == 0)  // the failed completion deleted the number
    }

    @Test func profilingAttemptsEndAfterSevenDays() async throws {
        let f = PaymentsFixture()
        _ = try await f.registeredCard()
        let sweeper = sweeper(f)
        #expect(try await count(f, Collections.profilingAttempts) == 1)
        f.clock.advance(by: 7 * 86_400 - 1)
        try await sweeper.sweep()
        #expect(try await count(f, Collections.profilingAttempts) == 1)
        // Over a second later; the kind is read hourly, so it goes at the next hourly read.
        f.clock.advance(by: 1)
        try await sweeper.sweep()
        #expect(try await count(f, Collections.profilingAttempts) == 1)
        f.clock.advance(by: TimeInterval(RecordLifetime.longLivedSweepSeconds - 1))
        try await sweeper.sweep()
        #expect(try await count(f, Collections.profilingAttempts) == 0)
    }

    @Test func riskHistoryEndsWithItsWindowAndTheAmountsAfterAYear() async throws {
        let p = try await PayInFixture()
        let f = p.base
        let (card, reference) = try await p.card()
        _ = try await p.payIns.create(clientId: "shop", request: p.request(card: card, reference: reference))
        let sweeper = sweeper(f)
        #expect(try await count(f, PayInRiskHistory.attempts) > 0)
        #expect(try await count(f, PayInRiskHistory.successes) == 1)
        let window = TimeInterval(f.services.payIns.riskEngine.policy.windowSeconds)
        f.clock.advance(by: window - 1)
        try await sweeper.sweep()
        #expect(try await count(f, PayInRiskHistory.attempts) > 0)
        f.clock.advance(by: 1)
        try await sweeper.sweep()
        #expect(try await count(f, PayInRiskHistory.attempts) == 0)
        #expect(try await count(f, PayInRiskHistory.successes) == 1)
        f.clock.advance(by: f.services.environment.configuration.riskHistoryRetention)
        try await sweeper.sweep()
        #expect(try await count(f, PayInRiskHistory.successes) == 0)
        #expect(try await count(f, PayInService.payIns) == 1)  // the pay-in itself is the merchant's record
    }

    @Test func challengeEntriesEndWithTheirTransaction() async throws {
        let p = try await PayInFixture()
        let f = p.base
        let (card, reference) = try await p.card(PayInFixture.challenged)
        let payIn = try await p.payIns.create(clientId: "shop", request: p.request(card: card, reference: reference))
        #expect(payIn.status == "CREATED")
        #expect(try await count(f, PayInService.awaiting) == 1)
        // The fixture's pay-in service and the merchant services share the store: sweep with the fixture's.
        let sweeper = RecordSweeper(
            store: f.store, clock: f.clock, lifetimes: f.services.recordLifetimes,
            rounds: [{ _ = try await p.payIns.expireDueChallenges() }])
        f.clock.advance(by: 3600)
        try await sweeper.sweep()
        #expect(try await count(f, PayInService.awaiting) == 0)
        #expect(try await p.payIns.get(clientId: "shop", id: payIn.id).status == "FAILED")
    }

    @Test func heldSecurityCodesAreWipedByTheSweeper() async throws {
        let f = PaymentsFixture()
        let registration = try await f.registration()
        _ = try await f.tokenize(registration, f.form(registration))
        #expect(f.services.securityCodes.purgeExpired() == 1)
        f.clock.advance(by: f.services.environment.configuration.securityCodeRetention)
        try await sweeper(f).sweep()
        #expect(f.services.securityCodes.purgeExpired() == 0)
    }

    @Test func metricsCountEveryKind() async throws {
        let f = PaymentsFixture()
        _ = try await f.registeredCard()
        let sweeper = sweeper(f)
        try await sweeper.sweep()
        let text = sweeper.metricsText()
        for lifetime in f.services.recordLifetimes {
            #expect(text.contains("cardvault_records{kind=\"\(lifetime.collection)\"} "))
        }
        #expect(text.contains("cardvault_records{kind=\"cards\"} 1\n"))
        #expect(text.contains("cardvault_records{kind=\"card-numbers\"} 1\n"))
        #expect(text.contains("cardvault_records_expired_total{kind=\"bearer-tokens\"} 0\n"))
        #expect(text.contains("cardvault_sweep_rounds_total 1\n"))
        // Each collection has exactly one lifetime.
        let names = f.services.recordLifetimes.map(\.collection)
        #expect(Set(names).count == names.count)
    }

    @Test func aRecordChangedDuringTheSweepIsLeftForTheNextRound() async throws {
        let f = PaymentsFixture()
        let store = f.store
        try await store.put("test-kind", id: "a", value: [1])
        let lifetime = RecordLifetime("test-kind", "test") { record, _ in
            // Someone updates the record between the read and the delete.
            try await store.put("test-kind", id: record.id, value: [2])
            return [.delete(collection: record.collection, id: record.id, condition: .version(record.version))]
        }
        let report = try await RecordSweeper(store: store, clock: f.clock, lifetimes: [lifetime]).sweep()
        #expect(report.skipped == 1)
        #expect(try await store.get("test-kind", id: "a")?.value == [2])
    }
}
