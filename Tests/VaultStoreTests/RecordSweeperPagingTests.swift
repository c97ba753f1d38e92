import Foundation
import Testing
import VaultCore

@testable import VaultStore

@Suite struct RecordSweeperPagingTests {
    /// More records than one page (256), so the sweep reads several pages and rests after each full one; every
    /// record past its end goes, the others stay, and the counts (from the index, without a walk) say so.
    @Test func aSweepOverSeveralPagesEndsEveryExpiredRecordAndCountsTheRest() async throws {
        let sandbox = try StoreSandbox()
        let store = try sandbox.open(testOptions(segmentBytes: 1 << 20))
        let clock = ManualClock()
        let now = Int64(clock.now.timeIntervalSince1970)
        // Records 0, 3, 6, … ended a minute ago; the others end in an hour.
        for number in 0..<700 {
            let end = number % 3 == 0 ? now - 60 : now + 3600
            try await store.put("sessions", id: String(format: "s%04d", number), value: Array(String(end).utf8))
        }
        for number in 0..<40 { try await store.put("kept", id: "k\(number)", value: [1]) }
        let lifetimes = [
            RecordLifetime.deleted("sessions", "until its end") { Int64(String(decoding: $0.value, as: UTF8.self)) },
            RecordLifetime(kept: "kept", "always"),
        ]
        let sweeper = RecordSweeper(store: store, clock: clock, lifetimes: lifetimes, restPerWork: 1)
        let report = try await sweeper.sweep()
        #expect(report.expired == ["sessions": 234])
        #expect(report.remaining == ["sessions": 466, "kept": 40])
        #expect(try await store.get("sessions", id: "s0000") == nil)
        #expect(try await store.get("sessions", id: "s0001") != nil)
        #expect(try await store.count("sessions", prefix: "", after: nil, limit: 100) == 100)
        #expect(try await store.count("sessions", prefix: "s00", after: nil, limit: 1000) == 66)
        #expect(try await store.count("missing", prefix: "", after: nil, limit: 10) == 0)
        store.close()
    }

    /// A kind with a sweep interval is read at most that often (the first round reads it at once); a kind without
    /// one, every round.
    @Test func aKindWithASweepIntervalIsReadAtMostThatOften() async throws {
        let sandbox = try StoreSandbox()
        let store = try sandbox.open(testOptions(segmentBytes: 1 << 20))
        let clock = ManualClock()
        let start = Int64(clock.now.timeIntervalSince1970)
        let ends: @Sendable (Record) -> Int64? = { Int64(String(decoding: $0.value, as: UTF8.self)) }
        let lifetimes = [
            RecordLifetime.deleted("events", "until its end", at: ends).sweptEvery(3600),
            RecordLifetime.deleted("tokens", "until its end", at: ends),
        ]
        let sweeper = RecordSweeper(store: store, clock: clock, lifetimes: lifetimes, restPerWork: 0)
        for (collection, end) in [("events", start - 1), ("events", start + 60), ("tokens", start + 60)] {
            try await store.put(collection, id: "\(collection)-\(end)", value: Array(String(end).utf8))
        }
        #expect(try await sweeper.sweep().expired == ["events": 1])
        clock.advance(by: 120)
        // Both later records are over; only the kind without an interval is read.
        #expect(try await sweeper.sweep().expired == ["tokens": 1])
        #expect(try await store.get("events", id: "events-\(start + 60)") != nil)
        clock.advance(by: 3480)
        #expect(try await sweeper.sweep().expired == ["events": 1])
        #expect(try await store.count("events", prefix: "", after: nil, limit: 10) == 0)
        // The interval survives the move of clear ids (the wrapper keeps it).
        #expect(lifetimes[0].movingClearIds { _ in nil }.sweepInterval == 3600)
        #expect(lifetimes[1].sweepInterval == nil)
        store.close()
    }
}
