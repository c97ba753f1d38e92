import Testing
import VaultCore

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
        let first = try await counters.events("k", since: 100) { _ in
            scans += 1
            return [Self.event(100, "a"), Self.event(150, "b")]
        }
        #expect(first.map(\.transactionId) == ["a", "b"])
        // A commit reports "b" again (it was in the scan) and a new "c".
        counters.record([("k", Self.event(150, "b")), ("k", Self.event(160, "c")), ("other", Self.event(160, "x"))])
        let second = try await counters.events("k", since: 100) { _ in
            scans += 1
            return []
        }
        #expect(second.map(\.transactionId) == ["a", "b", "c"])
        #expect(scans == 1)
        // The window moves on: older events drop out.
        #expect(try await counters.events("k", since: 151) { _ in [] }.map(\.transactionId) == ["c"])
        // A key nobody asked for was not kept: its seeding scan reads it from the store.
        #expect(try await counters.events("other", since: 0) { _ in [Self.event(160, "x")] }.count == 1)
    }

    @Test func eventsCommittedWhileSeedingAreMerged() async throws {
        let counters = RiskCounters()
        let events = try await counters.events("k", since: nil) { _ in
            // Commits made durable while the scan runs: one the scan saw, one it did not.
            counters.record([("k", Self.event(5, "seen")), ("k", Self.event(6, "late"))])
            return [Self.event(5, "seen")]
        }
        #expect(events.map(\.transactionId) == ["seen", "late"])
    }

    @Test func keepsTheNewestUpToTheLimitAndForgetsFailedSeeds() async throws {
        let counters = RiskCounters(limit: 3)
        _ = try await counters.events("k", since: nil) { _ in (1...5).map { Self.event(Int64($0), "t\($0)") } }
        counters.record([("k", Self.event(9, "t9"))])
        #expect(try await counters.events("k", since: nil) { _ in [] }.map(\.transactionId) == ["t4", "t5", "t9"])
        struct Failure: Error {}
        await #expect(throws: Failure.self) { try await counters.events("bad", since: nil) { _ in throw Failure() } }
        #expect(try await counters.events("bad", since: nil) { _ in [Self.event(1, "x")] }.count == 1)
    }

    @Test func onASharedStoreACounterIsSeededAgainOnceOlderThanTheRefresh() async throws {
        var history = [Self.event(100, "a")]
        var scans = 0
        func read(_ counters: RiskCounters, at now: Int64) async throws -> [String] {
            try await counters.events("k", since: nil, nowMillis: now * 1000) { _ in
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

    @Test func aStaleCounterIsReadAgainByOneCallerWhileTheOthersReadItAsHeld() async throws {
        let counters = RiskCounters(refreshAfter: 1)
        var scans = 0
        _ = try await counters.events("k", since: nil, nowMillis: 100_000) { _ in
            scans += 1
            return [Self.event(100, "a")]
        }
        struct Failure: Error {}
        // The first caller after the second is over reads the history again; one arriving meanwhile does not.
        var during: [String] = []
        await #expect(throws: Failure.self) {
            try await counters.events("k", since: nil, nowMillis: 101_000) { _ in
                scans += 1
                during = try await counters.events("k", since: nil, nowMillis: 101_000) { _ in
                    scans += 1
                    return []
                }.map(\.transactionId)
                throw Failure()
            }
        }
        #expect(during == ["a"] && scans == 2)
        // The refresh failed: the counter is kept, and the next caller reads the history again.
        let refreshed = try await counters.events("k", since: nil, nowMillis: 101_000) { _ in
            scans += 1
            counters.record([("k", Self.event(101, "mine"))])  // committed here while the scan runs
            return [Self.event(100, "a"), Self.event(100, "elsewhere")]
        }
        #expect(refreshed.map(\.transactionId) == ["a", "elsewhere", "mine"] && scans == 3)
        #expect(try await counters.events("k", since: nil, nowMillis: 101_000) { _ in [] }.count == 3 && scans == 3)
    }

    @Test func aRefreshReadsTheHistorysTailAndNowAndThenAllOfIt() async throws {
        // The history as the store holds it; a scan reads the events stamped from `from` on (all when nil).
        var history = (1...50).map { Self.event(Int64($0), "old\($0)") }
        var reads: [Int64?] = []
        func read(_ counters: RiskCounters, at now: Int64) async throws -> [String] {
            try await counters.events("k", since: nil, nowMillis: now * 1000) { from in
                reads.append(from)
                return history.filter { $0.stamp >= (from ?? .min) }
            }.map(\.transactionId)
        }
        let counters = RiskCounters(refreshAfter: 1, overlap: 5, fullRefreshAfter: 60)
        #expect(try await read(counters, at: 100).count == 50)
        // Committed through another daemon: one within the overlap, one stamped long before it landed.
        history += [Self.event(97, "recent"), Self.event(20, "stalled")]
        let refreshed = try await read(counters, at: 101)
        #expect(refreshed.count == 51 && refreshed.contains("recent") && !refreshed.contains("stalled"))
        #expect(try await read(counters, at: 103).count == 51)
        // A minute after the whole history was read, it is read whole again: the stalled event is counted.
        let whole = try await read(counters, at: 160)
        #expect(whole.count == 52 && whole.contains("stalled"))
        // A clock that went back reads it whole too.
        _ = try await read(counters, at: 150)
        #expect(reads == [nil, 95, 96, nil, nil])
    }

    @Test func thePayInsCountersAreReadTogetherAndOnlyWhenNotHeldOrStale() async throws {
        let counters = RiskCounters(refreshAfter: 1)
        let started = Locked(Set<String>())
        let scans = Locked(0)
        // Seeds that saw all the others started (read one after the other, the first would wait for them in vain).
        let metTheOthers = Locked(0)
        func seed(_ keys: [String], at now: Int64, on counters: RiskCounters) async throws {
            let together = keys.count
            let seedings = keys.map { RiskCounters.Seeding(key: $0, since: nil, collection: "c", prefix: $0 + ":") }
            try await counters.seed(seedings, nowMillis: now) { counter, _ in
                scans.withLock { $0 += 1 }
                started.withLock { _ = $0.insert(counter.key) }
                for _ in 0..<2_000 where started.withLock({ $0.count }) < together {
                    try await Task.sleep(for: .milliseconds(1))
                }
                if started.withLock({ $0.count }) >= together { metTheOthers.withLock { $0 += 1 } }
                return [Self.event(100, counter.key + "-event")]
            }
        }
        try await seed(["a", "b", "c"], at: 100_000, on: counters)
        #expect(metTheOthers.withLock { $0 } == 3 && scans.withLock { $0 } == 3)
        // Held and fresh: nothing is read, here or by the reads that follow.
        try await seed(["a", "b", "c"], at: 100_000, on: counters)
        #expect(
            try await counters.events("b", since: nil, nowMillis: 100_000) { _ in [] }.map(\.transactionId) == [
                "b-event"
            ])
        #expect(scans.withLock { $0 } == 3)
        // A second later all three are stale; with a new key, four are read together.
        started.withLock { $0 = [] }
        metTheOthers.withLock { $0 = 0 }
        try await seed(["a", "b", "c", "d"], at: 101_000, on: counters)
        #expect(metTheOthers.withLock { $0 } == 4 && scans.withLock { $0 } == 7)
        // A store one daemon owns: the reads seed their counters themselves.
        let owned = RiskCounters()
        try await seed(["e"], at: 100_000, on: owned)
        #expect(scans.withLock { $0 } == 7)
        #expect(try await owned.events("e", since: nil, nowMillis: 100_000) { _ in [] }.isEmpty)
    }

    @Test func countersSeededTogetherAreReadAgainSpreadOverTheSecondEachWithinIt() async throws {
        let counters = RiskCounters(refreshAfter: 1)
        let seedings = (0..<64).map {
            RiskCounters.Seeding(key: "key-\($0)", since: nil, collection: "c", prefix: "key-\($0):")
        }
        let scans = Locked([String: [Int64]]())
        func seed(at now: Int64) async throws {
            try await counters.seed(seedings, nowMillis: now) { counter, _ in
                scans.withLock { $0[counter.key, default: []].append(now) }
                return []
            }
        }
        try await seed(at: 100_000)
        // Every 50 ms for two seconds: which keys are read again, and when.
        for step in Int64(1)...40 { try await seed(at: 100_000 + step * 50) }
        let reads = scans.withLock { $0 }
        // Each key once a second, never more than a second after its last read...
        for key in seedings.map(\.key) {
            let times = reads[key] ?? []
            #expect(times.count == 3 && times.first == 100_000, "\(key): \(times)")
            for (earlier, later) in zip(times, times.dropFirst()) { #expect(later - earlier <= 1_000) }
        }
        // ...and not all in the same instant: their first refreshes fall in many of the twenty 50 ms steps.
        let firstRefreshes = Set(seedings.compactMap { reads[$0.key]?.dropFirst().first })
        #expect(firstRefreshes.count >= 8)
    }

    @Test func aSeedingsScanStartsAtItsWindowOrLater() {
        let windowed = RiskCounters.Seeding(key: "k", since: 100, collection: "c", prefix: "p:")
        #expect(windowed.first(from: nil) == 100 && windowed.first(from: 90) == 100 && windowed.first(from: 120) == 120)
        let whole = RiskCounters.Seeding(key: "k", since: nil, collection: "c", prefix: "p:")
        #expect(whole.first(from: nil) == nil && whole.first(from: 120) == 120)
    }

    @Test func aCounterBeingRefreshedIsNotForgottenToMakeRoom() async throws {
        let counters = RiskCounters(maximumKeys: 2, refreshAfter: 1)
        _ = try await counters.events("k1", since: nil, nowMillis: 100_000) { _ in [Self.event(50, "old")] }
        _ = try await counters.events("k2", since: nil, nowMillis: 100_000) { _ in [] }
        // k1's refresh reads only the tail; meanwhile a third key needs room, and k1 is the least recently used.
        let refreshed = try await counters.events("k1", since: nil, nowMillis: 101_000) { from in
            #expect(from == 95)
            _ = try await counters.events("k3", since: nil, nowMillis: 101_000) { _ in [] }
            return [Self.event(100, "new")]
        }
        #expect(refreshed.map(\.transactionId) == ["old", "new"])
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
