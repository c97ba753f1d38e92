import Foundation
import Testing
import VaultCore

@testable import VaultStore

/// A kind found through a deadline index: the sweeper reads the kind whole in its first round and then once a day
/// (filing the records written without entries), and otherwise only the entries that are due, moving or dropping
/// each entry as it takes its record forward.
@Suite struct RecordDeadlinesTests {
    /// The test kind: a record's value is `<stage> <deadline>`. Stage `a` moves to `b` 100 s after its deadline,
    /// `b` ends (deleted) at its deadline, `kept` has no deadline.
    static let index = DeadlineIndex(collection: "sessions-due")

    static func parse(_ record: Record) -> (stage: String, deadline: Int64) {
        let parts = String(decoding: record.value, as: UTF8.self).split(separator: " ")
        return (String(parts[0]), parts.count > 1 ? Int64(parts[1]) ?? 0 : 0)
    }

    static func value(_ stage: String, _ deadline: Int64) -> [UInt8] { Array("\(stage) \(deadline)".utf8) }

    static let lifetime = RecordLifetime("sessions", "two stages, then gone") { record, now in
        let (stage, deadline) = parse(record)
        guard stage != "kept", deadline <= now else { return nil }
        if stage == "a" {
            return [
                .put(
                    collection: record.collection, id: record.id, value: value("b", deadline + 100),
                    condition: .version(record.version))
            ]
        }
        return [.delete(collection: record.collection, id: record.id, condition: .version(record.version))]
    }.indexed(by: index) { record, _ in
        let (stage, deadline) = parse(record)
        return stage == "kept" ? nil : deadline
    }

    static func entries(_ store: some RecordStore) async throws -> [String] {
        try await store.scanAll(index.collection).map(\.id)
    }

    /// An empty in-memory store, a manual clock, its time in seconds, and a sweeper of the test kind over them.
    static func memorySweeper() -> (InMemoryRecordStore, ManualClock, Int64, RecordSweeper) {
        let store = InMemoryRecordStore()
        let clock = ManualClock()
        let sweeper = RecordSweeper(store: store, clock: clock, lifetimes: [lifetime], restPerWork: 0)
        return (store, clock, Int64(clock.now.timeIntervalSince1970), sweeper)
    }

    @Test func theFirstRoundFilesEveryRecordThenRoundsReadOnlyTheDueEntries() async throws {
        let sandbox = try StoreSandbox()
        let store = try sandbox.open(testOptions(segmentBytes: 1 << 20))
        let clock = ManualClock()
        let now = Int64(clock.now.timeIntervalSince1970)
        // Written without entries, as a build before the index did.
        try await store.put("sessions", id: "old-over", value: Self.value("b", now - 5))
        try await store.put("sessions", id: "old-open", value: Self.value("a", now + 50))
        try await store.put("sessions", id: "old-kept", value: Self.value("kept", 0))
        let sweeper = RecordSweeper(store: store, clock: clock, lifetimes: [Self.lifetime], restPerWork: 0)
        #expect(try await sweeper.sweep().expired == ["sessions": 1])
        #expect(try await store.get("sessions", id: "old-over") == nil)
        // The open one is filed at its deadline; the kept one has none.
        #expect(try await Self.entries(store) == [DeadlineIndex.entryId(at: now + 50, recordId: "old-open")])
        #expect(try await store.get(Collections.sweeperState, id: "sessions")?.value == Array(String(now).utf8))

        // From now on the kind is not read whole: a record over but without an entry is not met...
        try await store.put("sessions", id: "unfiled", value: Self.value("b", now - 5))
        // ...and a record filed as the domain files it (in the batch that creates it) is met at its deadline.
        try await store.commit([
            .put(collection: "sessions", id: "new", value: Self.value("a", now + 20), condition: .absent),
            Self.index.entry(for: "new", at: now + 20),
        ])
        clock.advance(by: 19)
        #expect(try await sweeper.sweep().expired == [:])
        clock.advance(by: 1)
        #expect(try await sweeper.sweep().expired == ["sessions": 1])
        // `new` went to stage b, and its entry moved to the new deadline.
        #expect(Self.parse(try #require(try await store.get("sessions", id: "new"))).stage == "b")
        #expect(
            try await Self.entries(store) == [
                DeadlineIndex.entryId(at: now + 50, recordId: "old-open"),
                DeadlineIndex.entryId(at: now + 120, recordId: "new"),
            ])
        #expect(try await store.get("sessions", id: "unfiled") != nil)

        // A new sweeper (a restart) reads the time of the last whole read and keeps to the index.
        let restarted = RecordSweeper(store: store, clock: clock, lifetimes: [Self.lifetime], restPerWork: 0)
        clock.advance(by: 30)
        #expect(try await restarted.sweep().expired == ["sessions": 1])  // old-open, at now + 50
        clock.advance(by: 70)
        #expect(try await restarted.sweep().expired == ["sessions": 1])  // new, at now + 120
        #expect(try await store.get("sessions", id: "new") == nil)
        #expect(try await Self.entries(store) == [DeadlineIndex.entryId(at: now + 150, recordId: "old-open")])
        clock.advance(by: 30)
        #expect(try await restarted.sweep().expired == ["sessions": 1])
        #expect(try await Self.entries(store).isEmpty)
        #expect(try await store.get("sessions", id: "unfiled") != nil)
        store.close()
    }

    /// On a new store (no record of the kind yet) the index is complete from the start: no round reads the kind
    /// whole. A store that holds records of the kind is left for the first round.
    @Test func aKindWithoutRecordsIsMarkedCompleteAtStart() async throws {
        let (store, clock, now, sweeper) = Self.memorySweeper()
        #expect(try await sweeper.markEmptyIndexedKinds() == ["sessions"])
        #expect(try await sweeper.markEmptyIndexedKinds() == [])
        try await store.put("sessions", id: "unfiled", value: Self.value("b", now - 5))
        #expect(try await sweeper.sweep().expired == [:])
        #expect(try await store.get("sessions", id: "unfiled") != nil)

        let upgraded = InMemoryRecordStore()
        try await upgraded.put("sessions", id: "unfiled", value: Self.value("b", now - 5))
        let first = RecordSweeper(store: upgraded, clock: clock, lifetimes: [Self.lifetime], restPerWork: 0)
        #expect(try await first.markEmptyIndexedKinds() == [])
        #expect(try await first.sweep().expired == ["sessions": 1])
    }

    /// Once a day (`wholeReadEvery`) the kind is read whole again: a record written without its entry (an older
    /// daemon on a shared database) is ended or filed then. The time of the last whole read survives a restart.
    @Test func aWholeReadOnceADayCatchesWhatTheIndexMissed() async throws {
        let (store, clock, now, sweeper) = Self.memorySweeper()
        #expect(try await sweeper.markEmptyIndexedKinds() == ["sessions"])
        try await store.put("sessions", id: "unfiled-over", value: Self.value("b", now + 10))
        try await store.put("sessions", id: "unfiled-open", value: Self.value("a", now + 100_000))
        clock.advance(by: 86_399)
        #expect(try await sweeper.sweep().expired == [:])
        #expect(try await Self.entries(store).isEmpty)
        let restarted = RecordSweeper(store: store, clock: clock, lifetimes: [Self.lifetime], restPerWork: 0)
        #expect(try await restarted.sweep().expired == [:])  // the day is counted from the stored time
        clock.advance(by: 1)
        #expect(try await restarted.sweep().expired == ["sessions": 1])
        #expect(try await store.get("sessions", id: "unfiled-over") == nil)
        #expect(try await Self.entries(store) == [DeadlineIndex.entryId(at: now + 100_000, recordId: "unfiled-open")])
        #expect(
            try await store.get(Collections.sweeperState, id: "sessions")?.value == Array(String(now + 86_400).utf8))
    }

    @Test func anEntryWhoseRecordIsGoneOrHasNoDeadlineLeftIsDropped() async throws {
        let (store, clock, now, sweeper) = Self.memorySweeper()
        _ = try await sweeper.sweep()  // the first round: nothing to file
        try await store.commit([
            .put(collection: "sessions", id: "done", value: Self.value("a", now + 10), condition: .absent),
            Self.index.entry(for: "done", at: now + 10),
            .put(collection: "sessions", id: "removed", value: Self.value("a", now + 10), condition: .absent),
            Self.index.entry(for: "removed", at: now + 10),
        ])
        // One becomes kept (no deadline), the other is deleted by its owner; neither entry is touched meanwhile.
        try await store.put("sessions", id: "done", value: Self.value("kept", 0))
        try await store.delete("sessions", id: "removed")
        #expect(try await Self.entries(store).count == 2)
        clock.advance(by: 10)
        let report = try await sweeper.sweep()
        #expect(report.expired == [:] && report.skipped == 0)
        #expect(try await Self.entries(store).isEmpty)
        #expect(try await store.get("sessions", id: "done") != nil)
    }

    /// A record whose deadline stays in the past after its expiry (the kind's rules disagree) is filed at the next
    /// second: the round ends, and the next one meets the record again.
    @Test func aDeadlineInThePastIsFiledAtTheNextSecond() async throws {
        let store = InMemoryRecordStore()
        let clock = ManualClock()
        let now = Int64(clock.now.timeIntervalSince1970)
        let calls = Locked(0)
        let stubborn = RecordLifetime("sessions", "never ends, always due") { _, _ in
            calls.withLock { $0 += 1 }
            return nil
        }.indexed(by: Self.index) { _, now in now - 60 }
        let sweeper = RecordSweeper(store: store, clock: clock, lifetimes: [stubborn], restPerWork: 0)
        try await store.put("sessions", id: "s", value: [1])
        _ = try await sweeper.sweep()  // the first round reads the kind whole and files the record
        #expect(calls.withLock { $0 } == 1)
        #expect(try await Self.entries(store) == [DeadlineIndex.entryId(at: now + 1, recordId: "s")])
        _ = try await sweeper.sweep()  // not due yet: filed a second on
        #expect(calls.withLock { $0 } == 1)
        clock.advance(by: 1)
        _ = try await sweeper.sweep()  // met once, filed a second on again
        #expect(calls.withLock { $0 } == 2)
        #expect(try await Self.entries(store) == [DeadlineIndex.entryId(at: now + 2, recordId: "s")])
    }

    /// A kind whose older records move to keyed ids (`movingClearIds`): the round that moves a record files it under
    /// its new id, so the moved record is met at its deadline and not only at the next whole read a day later.
    @Test func aRecordMovedToItsKeyedIdIsFiledUnderIt() async throws {
        let store = InMemoryRecordStore()
        let clock = ManualClock()
        let now = Int64(clock.now.timeIntervalSince1970)
        let moving = RecordLifetime("sessions", "two stages, then gone") { record, now in
            try await Self.lifetime.expire!(record, now)
        }.movingClearIds { $0.hasPrefix("clear-") ? "keyed-" + $0.dropFirst(6) : nil }.indexed(by: Self.index) {
            record, now in try Self.lifetime.deadlines!.next(record, now)
        }
        try await store.put("sessions", id: "clear-1", value: Self.value("b", now + 30))
        let sweeper = RecordSweeper(store: store, clock: clock, lifetimes: [moving], restPerWork: 0)
        try await sweeper.sweep()
        #expect(try await store.scanAll("sessions").map(\.id) == ["keyed-1"])
        #expect(try await Self.entries(store) == [DeadlineIndex.entryId(at: now + 30, recordId: "keyed-1")])
        clock.advance(by: 30)
        #expect(try await sweeper.sweep().expired == ["sessions": 1])
        #expect(try await store.scanAll("sessions").isEmpty)
        #expect(try await Self.entries(store).isEmpty)
    }

    @Test func entryIdsSortByDeadlineAndReadBack() {
        let ids = [Int64(-5), 0, 9, 1_700_000_000, 99_999_999_999_999].map {
            DeadlineIndex.entryId(at: $0, recordId: "shop:reg-\($0)")
        }
        #expect(ids == ids.sorted())
        #expect(ids[0] == "000000000000:shop:reg--5")
        #expect(DeadlineIndex.parse(ids[3])! == (1_700_000_000, "shop:reg-1700000000"))
        #expect(DeadlineIndex.parse(ids[4])!.deadline == DeadlineIndex.latest)
        for malformed in ["", "000000000001:", "00000000001:x", "00000000000a:x", "000000000001-x", "reg"] {
            #expect(DeadlineIndex.parse(malformed) == nil, "\(malformed)")
        }
    }
}
