import Foundation
import Testing
import VaultCore

@testable import VaultStore

/// What the sweeper keeps in the store for the next round of any daemon: when each kind read at most hourly was
/// read, and the counts of the last round.
@Suite struct RecordSweeperSharedStateTests {
    /// Counts the reads and counts each collection gets (the other calls go to the store as they are).
    final class CountingStore: RecordStore {
        let store = InMemoryRecordStore()
        let scans = Locked<[String: Int]>([:])
        let counts = Locked<[String: Int]>([:])
        /// How long each count takes (a large store on PostgreSQL takes seconds).
        let countDelay: Duration

        init(countDelay: Duration = .zero) { self.countDelay = countDelay }

        func get(_ collection: String, id: String) async throws -> Record? { try await store.get(collection, id: id) }
        func commit(_ writes: [RecordWrite]) async throws -> [UInt64] { try await store.commit(writes) }
        func scan(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> [Record] {
            scans.withLock { $0[collection, default: 0] += 1 }
            return try await store.scan(collection, prefix: prefix, after: after, limit: limit)
        }
        func count(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> Int {
            counts.withLock { $0[collection, default: 0] += 1 }
            if countDelay > .zero { try await Task.sleep(for: countDelay) }
            return try await store.count(collection, prefix: prefix, after: after, limit: limit)
        }
    }

    static let ends: @Sendable (Record) -> Int64? = { Int64(String(decoding: $0.value, as: UTF8.self)) }
    static let lifetimes = [
        RecordLifetime.deleted("events", "until its end", at: ends).sweptEvery(3600),
        RecordLifetime.deleted("tokens", "until its end", at: ends),
        RecordLifetime(kept: "cards", "always"),
    ]

    /// A sweeper that starts after another read a kind (a restart, or another daemon taking the lead) reads it
    /// only when its hour since that read is over.
    @Test func aKindReadAtMostHourlyIsNotReadAgainByANewSweeperBeforeItsHour() async throws {
        let store = CountingStore()
        let clock = ManualClock()
        let start = Int64(clock.now.timeIntervalSince1970)
        try await store.put("events", id: "e1", value: Array(String(start + 600).utf8))
        let first = RecordSweeper(store: store, clock: clock, lifetimes: Self.lifetimes, restPerWork: 0)
        _ = try await first.sweepRecords()
        #expect(store.scans.withLock { $0["events"] } == 1)
        clock.advance(by: 1200)  // e1 is over now
        let second = RecordSweeper(store: store, clock: clock, lifetimes: Self.lifetimes, restPerWork: 0)
        #expect(try await second.sweepRecords().expired == [:])
        #expect(store.scans.withLock { $0["events"] } == 1, "not read again within the hour")
        #expect(try await store.get("events", id: "e1") != nil)
        clock.advance(by: 2400)
        let third = RecordSweeper(store: store, clock: clock, lifetimes: Self.lifetimes, restPerWork: 0)
        #expect(try await third.sweepRecords().expired == ["events": 1])
        #expect(store.scans.withLock { $0["events"] } == 2)
        // A clock set back makes the kind due at once.
        clock.advance(by: -7200)
        #expect(try await third.sweepRecords().expired == [:])
        #expect(store.scans.withLock { $0["events"] } == 3)
    }

    /// A daemon that does not lead the sweep shows the counts the leader's last round published, without counting
    /// the store; before any round was published, it counts for itself.
    @Test func aDaemonThatDoesNotLeadTakesTheLeadersCounts() async throws {
        let store = CountingStore()
        let clock = ManualClock()
        for number in 0..<5 { try await store.put("cards", id: "c\(number)", value: [1]) }
        try await store.put("tokens", id: "t1", value: Array(String(Int64.max).utf8))
        let follower = RecordSweeper(store: store, clock: clock, lifetimes: Self.lifetimes, restPerWork: 0)
        try await follower.adoptPublishedCounts()
        #expect(store.counts.withLock { $0["cards"] } == 1, "nothing published yet: counted")
        #expect(follower.metricsText().contains("cardvault_records{kind=\"cards\"} 5\n"))

        let leader = RecordSweeper(store: store, clock: clock, lifetimes: Self.lifetimes, restPerWork: 0)
        for number in 5..<9 { try await store.put("cards", id: "c\(number)", value: [1]) }
        #expect(try await leader.sweepRecords().remaining == ["cards": 9, "tokens": 1, "events": 0])
        let countedBefore = store.counts.withLock { $0 }
        try await follower.adoptPublishedCounts()
        #expect(store.counts.withLock { $0 } == countedBefore, "the follower counted nothing")
        let text = follower.metricsText()
        #expect(text.contains("cardvault_records{kind=\"cards\"} 9\n"))
        #expect(text.contains("cardvault_records{kind=\"tokens\"} 1\n"))
        #expect(text.contains("cardvault_records{kind=\"events\"} 0\n"))
        // Counts older than the age allowed (the leader stopped publishing) are not taken: counted again.
        clock.advance(by: 601)
        try await store.put("cards", id: "c9", value: [1])
        try await follower.adoptPublishedCounts(maximumAge: 600)
        #expect(store.counts.withLock { $0["cards"] } == (countedBefore["cards"] ?? 0) + 1)
        #expect(follower.metricsText().contains("cardvault_records{kind=\"cards\"} 10\n"))
    }

    /// A count that takes long is not repeated every round, by whichever daemon leads, before `countRestPerWork` times
    /// as long has passed; the rounds between show the last counts less what they ended (and publish them), and a
    /// cheap count is made every round.
    @Test func aSlowCountIsNotRepeatedEveryRoundByAnyLeader() async throws {
        let store = CountingStore(countDelay: .milliseconds(20))
        let clock = ManualClock()
        let start = Int64(clock.now.timeIntervalSince1970)
        for number in 0..<3 { try await store.put("cards", id: "c\(number)", value: [1]) }
        try await store.put("tokens", id: "t1", value: Array(String(start + 10).utf8))
        try await store.put("tokens", id: "t2", value: Array(String(Int64.max).utf8))
        // Three counts of 20 ms or more, 60 ms in all at least: not due again before 600 s have passed.
        func daemon() -> RecordSweeper {
            RecordSweeper(
                store: store, clock: clock, lifetimes: Self.lifetimes, restPerWork: 0, countRestPerWork: 10_000)
        }
        let first = daemon()
        #expect(try await first.sweepRecords().remaining == ["cards": 3, "tokens": 2, "events": 0])
        #expect(store.counts.withLock { $0["cards"] } == 1)
        try await store.put("cards", id: "c3", value: [1])
        clock.advance(by: 60)  // t1 is over
        // Another daemon leads this round: it takes the counts the first published.
        let second = daemon()
        let round = try await second.sweepRecords()
        #expect(round.expired == ["tokens": 1])
        #expect(round.remaining == ["cards": 3, "tokens": 1, "events": 0], "the last counts less the round's end")
        #expect(store.counts.withLock { $0["cards"] } == 1, "not counted again")
        #expect(second.metricsText().contains("cardvault_records{kind=\"tokens\"} 1\n"))
        // What a follower adopts is what the leader shows.
        try await first.adoptPublishedCounts()
        #expect(first.metricsText().contains("cardvault_records{kind=\"tokens\"} 1\n"))
        #expect(store.counts.withLock { $0["cards"] } == 1, "the follower counted nothing")
        // A daemon that starts meanwhile shows them too, without counting.
        let restarted = daemon()
        try await restarted.countsAtStart()
        #expect(restarted.metricsText().contains("cardvault_records{kind=\"tokens\"} 1\n"))
        #expect(restarted.metricsText().contains("cardvault_records{kind=\"cards\"} 3\n"))
        #expect(store.counts.withLock { $0["cards"] } == 1, "the starting daemon counted nothing")
        // Once the count is due again (600,000 s after it covers a count of up to 60 s), it is made.
        clock.advance(by: 600_000)
        #expect(try await first.sweepRecords().remaining == ["cards": 4, "tokens": 1, "events": 0])
        #expect(store.counts.withLock { $0["cards"] } == 2)
        clock.advance(by: 600_000)
        try await daemon().countsAtStart()
        #expect(store.counts.withLock { $0["cards"] } == 3, "a daemon that starts when the count is due counts")
        // So is it when the clock was set back before the count.
        clock.advance(by: -1_300_000)
        _ = try await second.sweepRecords()
        #expect(store.counts.withLock { $0["cards"] } == 4)

        // A cheap count is made every round.
        let quick = CountingStore()
        let every = RecordSweeper(store: quick, clock: clock, lifetimes: Self.lifetimes, restPerWork: 0)
        _ = try await every.sweepRecords()
        try await quick.put("cards", id: "c0", value: [1])
        #expect(try await every.sweepRecords().remaining["cards"] == 1)
        #expect(quick.counts.withLock { $0["cards"] } == 2)
    }

    /// As a service: the daemon that leads sweeps and publishes; one that does not adopts the counts each round.
    @Test func theServicesOfAFollowerAdoptTheCountsEachRound() async throws {
        struct Never: Leadership {
            func runIfLeader(_ job: String, _ round: @Sendable () async throws -> Void) async throws -> Bool { false }
        }
        // The leader works on the store directly; only the follower's calls are counted.
        let store = CountingStore()
        let clock = ManualClock()
        try await store.store.put("cards", id: "c1", value: [1])
        let leader = RecordSweeper(store: store.store, clock: clock, lifetimes: Self.lifetimes, restPerWork: 0)
        _ = try await leader.sweepRecords()
        let follower = RecordSweeper(store: store, clock: clock, lifetimes: Self.lifetimes, restPerWork: 0)
        let services = follower.services(interval: .milliseconds(20), leadership: Never(), logger: .disabled)
        let group = Task {
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                for service in services { tasks.addTask { try await service.run() } }
                try await tasks.waitForAll()
            }
        }
        defer { group.cancel() }
        func shows(_ cards: Int) async throws -> Bool {
            for _ in 0..<300 {
                if follower.metricsText().contains("cardvault_records{kind=\"cards\"} \(cards)\n") { return true }
                try await Task.sleep(for: .milliseconds(10))
            }
            return false
        }
        #expect(try await shows(1))
        // The service counted once as it started (or adopted); from now on its rounds only read what is published.
        let countedAtStart = store.counts.withLock { $0 }
        try await store.store.put("cards", id: "c2", value: [1])
        _ = try await leader.sweepRecords()
        #expect(try await shows(2))
        #expect(store.counts.withLock { $0 } == countedAtStart, "the follower counted nothing")
        #expect(store.scans.withLock { $0.isEmpty }, "the follower swept nothing")
    }
}
