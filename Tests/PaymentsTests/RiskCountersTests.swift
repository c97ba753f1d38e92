import Testing

@testable import Payments
@testable import Risk

/// The in-memory counters of the risk history: seeded once from the history, then kept by the commits.
@Suite struct RiskCountersTests {
    static func event(_ stamp: Int64, _ id: String, _ detail: String = "") -> RiskCounters.Event {
        RiskCounters.Event(stamp: stamp, transactionId: id, detail: detail)
    }

    @Test func seedsOnceThenCountsCommittedEventsOnceEach() async throws {
        let counters = RiskCounters()
        var scans = 0
        let first = try await counters.events("k", since: 100) {
            scans += 1
            return [Self.event(100, "a"), Self.event(150, "b")]
        }
        #expect(first.map(\.transactionId) == ["a", "b"])
        // A commit reports "b" again (it was in the scan) and a new "c".
        counters.record([("k", Self.event(150, "b")), ("k", Self.event(160, "c")), ("other", Self.event(160, "x"))])
        let second = try await counters.events("k", since: 100) {
            scans += 1
            return []
        }
        #expect(second.map(\.transactionId) == ["a", "b", "c"])
        #expect(scans == 1)
        // The window moves on: older events drop out.
        #expect(try await counters.events("k", since: 151) { [] }.map(\.transactionId) == ["c"])
        // A key nobody asked for was not kept: its seeding scan reads it from the store.
        #expect(try await counters.events("other", since: 0) { [Self.event(160, "x")] }.count == 1)
    }

    @Test func eventsCommittedWhileSeedingAreMerged() async throws {
        let counters = RiskCounters()
        let events = try await counters.events("k", since: nil) {
            // Commits made durable while the scan runs: one the scan saw, one it did not.
            counters.record([("k", Self.event(5, "seen")), ("k", Self.event(6, "late"))])
            return [Self.event(5, "seen")]
        }
        #expect(events.map(\.transactionId) == ["seen", "late"])
    }

    @Test func keepsTheNewestUpToTheLimitAndForgetsFailedSeeds() async throws {
        let counters = RiskCounters(limit: 3)
        _ = try await counters.events("k", since: nil) { (1...5).map { Self.event(Int64($0), "t\($0)") } }
        counters.record([("k", Self.event(9, "t9"))])
        #expect(try await counters.events("k", since: nil) { [] }.map(\.transactionId) == ["t4", "t5", "t9"])
        struct Failure: Error {}
        await #expect(throws: Failure.self) { try await counters.events("bad", since: nil) { throw Failure() } }
        counters.abandon("bad")
        #expect(try await counters.events("bad", since: nil) { [Self.event(1, "x")] }.count == 1)
    }

    @Test func onASharedStoreACounterIsSeededAgainOnceOlderThanTheRefresh() async throws {
        var history = [Self.event(100, "a")]
        var scans = 0
        func read(_ counters: RiskCounters, at now: Int64) async throws -> [String] {
            try await counters.events("k", since: nil, now: now) {
                scans += 1
                return history
            }.map(\.transactionId)
        }
        let shared = RiskCounters(refreshAfter: 1)
        #expect(try await read(shared, at: 100) == ["a"])
        history.append(Self.event(100, "b"))  // committed through another daemon: this one's commits never saw it
        #expect(try await read(shared, at: 100) == ["a"])  // within the second: the counter as held
        #expect(try await read(shared, at: 101) == ["a", "b"])
        #expect(scans == 2)
        // A clock that went back also reads again; a store one daemon owns never does.
        #expect(try await read(shared, at: 50) == ["a", "b"] && scans == 3)
        let owned = RiskCounters()
        scans = 0
        #expect(try await read(owned, at: 100) == ["a", "b"])
        history.append(Self.event(100, "c"))
        #expect(try await read(owned, at: 10_000) == ["a", "b"] && scans == 1)
    }

    @Test func historyIdsParseBackToTheirEvents() {
        let keys = PayInRiskHistory.Keys(fingerprint: "fp", userId: "user_1", ipAddress: "10.0.0.1", deviceId: "d-1")
        let writes =
            PayInRiskHistory.attemptWrites(clientId: "shop", keys: keys, transactionId: "payin_1", now: 1234)
            + PayInRiskHistory.outcomeWrites(
                clientId: "shop", keys: keys, transactionId: "payin_1", succeeded: true, amount: 4200, currency: "EUR",
                now: 1300)
        let events = PayInRiskHistory.counterEvents(writes)
        #expect(events.count == 5)
        #expect(events.allSatisfy { $0.event.transactionId == "payin_1" })
        #expect(events.filter { $0.key.hasPrefix("risk-attempts|shop:device:d-1:") }.map(\.event.detail) == ["fp"])
        #expect(
            events.last?.key == "risk-successes|shop:user:user_1:EUR:" && events.last?.event.detail == "4200"
                && events.last?.event.stamp == 1300)
    }
}
