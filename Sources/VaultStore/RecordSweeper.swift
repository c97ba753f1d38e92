import Foundation
public import VaultCore

/// One kind of stored record (one store collection) and when its records end.
///
/// Every collection the daemon writes has one: either a rule that says when a record is over (and what goes
/// with it), or none, for business records that live until their owner deletes them (users, cards, pay-ins) and
/// configuration (clients, checkout registrations). docs/operations.md, "Record lifetimes", lists them all.
public struct RecordLifetime: Sendable {
    /// The store collection, also the `kind` label in `/metrics`.
    public var collection: String
    /// How long a record lives, in words (for documentation and `cardvault` output).
    public var summary: String
    /// Decides one record at `now` (Unix seconds): nil keeps it; otherwise the writes that end it, with a
    /// version condition on the record itself, so that a record changed meanwhile is left for the next round.
    public var expire: (@Sendable (Record, Int64) async throws -> [RecordWrite]?)?
    /// At most this often (seconds) the sweeper reads the kind; nil: every round. For kinds that live weeks or
    /// more (events, audit and history records), where a record ended up to this much late changes nothing: each
    /// round reads and opens every record of a kind, so a large store's long-lived kinds would otherwise be read
    /// whole every minute. See ``sweptEvery(_:)``.
    public var sweepInterval: Int64?
    /// Set for a kind the sweeper finds through a deadline index (``indexed(by:wholeReadEvery:deadline:)``), not by
    /// reading it whole each round.
    public var deadlines: Deadlines?

    /// A kind whose records end by `expire`.
    public init(
        _ collection: String, _ summary: String,
        expire: @escaping @Sendable (Record, Int64) async throws -> [RecordWrite]?
    ) {
        self.collection = collection
        self.summary = summary
        self.expire = expire
    }

    /// A kind kept until its owner deletes it: counted, never swept.
    public init(kept collection: String, _ summary: String) {
        self.collection = collection
        self.summary = summary
        self.expire = nil
    }

    /// How often the daemon reads kinds whose records live a week or more (events, audit, history): hourly.
    public static let longLivedSweepSeconds: Int64 = 3600

    /// This lifetime, read by the sweeper at most every `seconds` (see ``sweepInterval``).
    public func sweptEvery(_ seconds: Int64) -> RecordLifetime {
        precondition(seconds > 0, "a sweep interval must be positive")
        var lifetime = self
        lifetime.sweepInterval = seconds
        return lifetime
    }

    /// A kind whose records end at a Unix time read from the record; the record alone is deleted.
    public static func deleted(
        _ collection: String, _ summary: String, at end: @escaping @Sendable (Record) throws -> Int64?
    ) -> RecordLifetime {
        RecordLifetime(collection, summary) { record, now in
            guard let endsAt = try end(record), endsAt <= now else { return nil }
            return [.delete(collection: record.collection, id: record.id, condition: .version(record.version))]
        }
    }
}

/// What one sweep round did.
public struct SweepReport: Sendable, Equatable {
    /// Records ended, by collection.
    public var expired: [String: Int] = [:]
    /// Records left in the store after the round, by collection.
    public var remaining: [String: Int] = [:]
    /// Records the round could not decide (undecodable or changed meanwhile); they are retried next round.
    public var skipped = 0

    public init() {}
}

/// The one sweeper of the daemon: runs every record kind's expiry against an injected clock, and the in-memory
/// expiries (held security codes, the bearer token cache, pending 3-D Secure challenges) with it.
///
/// The daemon runs it as ``PeriodicService``s (``services(interval:roundsInterval:logger:)``) in its service
/// group, which awaits the round in progress before the store closes. The last counts, less what the rounds since ended,
/// are what `/metrics` shows (``metricsText()``); a slow count is not repeated every round (``countRestPerWork``).
public final class RecordSweeper: Sendable {
    private let store: any RecordStore
    private let clock: any WallClock
    public let lifetimes: [RecordLifetime]
    private let rounds: [@Sendable () async throws -> Void]
    private let logger: Logger
    private let state = Locked(State())
    /// Records read per store scan.
    static let pageSize = 256
    /// After each full page, the sweep rests this many times as long as the page took: it then keeps about a
    /// quarter of one core. A sweep reads and opens every record that can expire (400k records took 4 s of CPU),
    /// and unpaced it took a whole core from the requests for that long, once a minute.
    private let restPerWork: Int
    /// A count of every kind that took longer than ``cheapCount`` is not repeated before this many times as long has
    /// passed, by whichever daemon leads (the published counts say when and how long): counting keeps at most about
    /// a hundredth of the time. On PostgreSQL a count walks each kind's primary key entries (two seconds for a few
    /// million records).
    private let countRestPerWork: Int
    /// Counts that took less than this (seconds) are repeated every round.
    static let cheapCount = 0.01

    private struct State {
        var remaining: [String: Int] = [:]
        var expiredTotal: [String: Int] = [:]
        var rounds = 0
        /// When each indexed kind was last read whole (``RecordLifetime/indexed(by:wholeReadEvery:deadline:)``), as
        /// read from or written to `sweeper-state`.
        var lastWholeRead: [String: Int64] = [:]
    }

    /// - Parameters:
    ///   - lifetimes: every record kind, each collection once.
    ///   - rounds: extra work of each round (in-memory expiries, domain expiries with their own transitions).
    ///   - restPerWork: how many times as long as a page of records took the sweep rests before the next page
    ///     (0: no rest).
    ///   - countRestPerWork: how many times as long as a count of every kind took (when over ``cheapCount``) the
    ///     rounds go on with the last counts before they count again.
    public init(
        store: any RecordStore, clock: any WallClock, lifetimes: [RecordLifetime],
        rounds: [@Sendable () async throws -> Void] = [], logger: Logger = .disabled, restPerWork: Int = 3,
        countRestPerWork: Int = 99
    ) {
        precondition(restPerWork >= 0, "restPerWork must not be negative")
        precondition(countRestPerWork >= 0, "countRestPerWork must not be negative")
        self.restPerWork = restPerWork
        self.countRestPerWork = countRestPerWork
        self.store = store
        self.clock = clock
        self.lifetimes = lifetimes
        self.rounds = rounds
        self.logger = logger
    }

    /// The sweeper as two services: the record expiries every `interval` (after counting the store at once, or
    /// taking the published counts while a slow count is not due, so `/metrics` shows every kind from the start),
    /// and the extra rounds (challenge deadlines, in-memory expiries, cheap) every `roundsInterval`.
    ///
    /// With several daemons on one store, the record expiries run only on the daemon that leads
    /// `record-sweeper` (`leadership`); the others take the counts it publishes (``adoptPublishedCounts()``), so
    /// each one's `/metrics` stays current without counting the store again.
    public func services(
        interval: Duration, roundsInterval: Duration = .seconds(5), leadership: any Leadership = SoleLeadership(),
        logger: Logger
    ) -> [any Service] {
        [
            SweeperService(
                sweeper: self,
                periodic: PeriodicService(name: "record-sweeper", interval: interval, logger: logger) { [self] in
                    let led = try await leadership.runIfLeader("record-sweeper") { _ = try await self.sweepRecords() }
                    if !led {
                        // Counts older than three rounds come from a leader that stopped publishing (a daemon of an
                        // older build leads during a rolling upgrade, or none does): counted here instead.
                        let seconds = interval.components.seconds
                        try await self.adoptPublishedCounts(maximumAge: max(120, 3 * seconds))
                    }
                }),
            PeriodicService(name: "expiry-rounds", interval: roundsInterval, logger: logger) { [self] in
                try await self.runRounds()
            },
        ]
    }

    /// The extra rounds alone.
    public func runRounds() async throws {
        for round in rounds { try await round() }
    }

    /// One full round: the extra rounds, then every kind's expiry and the counts.
    @discardableResult
    public func sweep() async throws -> SweepReport {
        try await runRounds()
        return try await sweepRecords()
    }

    /// Every kind's expiry, then the counts.
    @discardableResult
    public func sweepRecords() async throws -> SweepReport {
        var report = SweepReport()
        let now = Int64(clock.now.timeIntervalSince1970.rounded(.down))
        for lifetime in lifetimes {
            guard let expire = lifetime.expire else { continue }
            if let interval = lifetime.sweepInterval {
                // Not yet due (a clock set back makes it due at once). Read from the store each round, so that a
                // restart, or another daemon taking the lead, does not read the kind whole again before its time.
                let last = try await timeMark(Self.sweptMarkId(lifetime))
                if let last, last <= now, now < last + interval { continue }
            }
            var ended = 0
            if let deadlines = lifetime.deadlines {
                // Read whole when the index is not known complete, and then once per `wholeReadEvery` as a backstop
                // (a record written without its entry, by an older daemon on a shared database, is filed within it).
                // (A clock set back makes the whole read due at once, as for `sweepInterval`.)
                let last = try await lastWholeRead(lifetime)
                let readRecently = last.map { $0 <= now && now < $0 + deadlines.wholeReadEvery } ?? false
                if !readRecently {
                    ended += try await sweepWhole(lifetime, expire: expire, now: now, report: &report)
                    try await markWholeRead(lifetime, at: now)
                }
                ended += try await sweepDue(lifetime, deadlines, expire: expire, now: now, report: &report)
            } else {
                ended = try await sweepWhole(lifetime, expire: expire, now: now, report: &report)
            }
            if ended > 0 { report.expired[lifetime.collection] = ended }
            if lifetime.sweepInterval != nil { try await markTime(Self.sweptMarkId(lifetime), now) }
        }
        let counted = try await roundCounts(ended: report.expired)
        report.remaining = counted.counts
        do {
            try await publishCounts(counted, at: now)
        } catch {
            // The round's work is done; the daemons that do not lead count for themselves until counts come again.
            logger.warning("sweep counts not published", ["error": .string(String(describing: type(of: error)))])
        }
        let expired = report.expired
        let remaining = report.remaining
        state.withLock { state in
            state.remaining = remaining
            for (collection, count) in expired { state.expiredTotal[collection, default: 0] += count }
            state.rounds += 1
        }
        if !expired.isEmpty {
            logger.info(
                "records expired",
                ["total": .int(expired.values.reduce(0, +)), "kinds": .int(expired.count)])
        }
        return report
    }

    /// Reads every record of a kind and ends those that are over; for an indexed kind (whose index is not complete
    /// yet), files each record that has no entry at its next deadline too. Returns how many it ended.
    private func sweepWhole(
        _ lifetime: RecordLifetime, expire: @Sendable (Record, Int64) async throws -> [RecordWrite]?, now: Int64,
        report: inout SweepReport
    ) async throws -> Int {
        var after: String?
        var ended = 0
        while true {
            try Task.checkCancellation()
            let pageStart = ContinuousClock.now
            let page = try await store.scan(lifetime.collection, prefix: "", after: after, limit: Self.pageSize)
            var filings: [RecordWrite] = []
            for record in page {
                let step: Step
                do {
                    step = try await Self.step(record, entry: nil, lifetime: lifetime, expire: expire, now: now)
                } catch {
                    report.skipped += 1
                    continue
                }
                if step.indexOnly {
                    // Records written by this build were filed as they were created: only the others are.
                    for filing in step.writes {
                        if try await store.get(filing.collection, id: filing.id) == nil { filings.append(filing) }
                    }
                } else if try await apply(step.writes, report: &report) {
                    ended += 1
                }
            }
            try await apply(filings, report: &report)
            guard page.count == Self.pageSize, let last = page.last else { break }
            after = last.id
            if restPerWork > 0 { try await Task.sleep(for: (ContinuousClock.now - pageStart) * restPerWork) }
        }
        return ended
    }

    /// Reads the due entries of an indexed kind, in deadline order, and takes each one's record forward. Returns how
    /// many records it ended.
    private func sweepDue(
        _ lifetime: RecordLifetime, _ deadlines: RecordLifetime.Deadlines,
        expire: @Sendable (Record, Int64) async throws -> [RecordWrite]?, now: Int64, report: inout SweepReport
    ) async throws -> Int {
        var after: String?
        var ended = 0
        var due = true
        while due {
            try Task.checkCancellation()
            let pageStart = ContinuousClock.now
            let page = try await store.scan(deadlines.index.collection, prefix: "", after: after, limit: Self.pageSize)
            var moves: [RecordWrite] = []
            for entry in page {
                guard let (deadline, recordId) = DeadlineIndex.parse(entry.id) else {
                    report.skipped += 1  // not an entry of this form: left for the operator
                    continue
                }
                guard deadline <= now else {
                    due = false
                    break
                }
                let step: Step
                do {
                    let record = try await store.get(lifetime.collection, id: recordId)
                    step = try await Self.step(record, entry: entry, lifetime: lifetime, expire: expire, now: now)
                } catch let error as StoreError where error.code != .corrupted {
                    throw error
                } catch {
                    report.skipped += 1
                    continue
                }
                if step.indexOnly {
                    moves += step.writes
                } else if try await apply(step.writes, report: &report) {
                    ended += 1
                }
            }
            try await apply(moves, report: &report)
            guard due, page.count == Self.pageSize, let last = page.last else { break }
            after = last.id
            if restPerWork > 0 { try await Task.sleep(for: (ContinuousClock.now - pageStart) * restPerWork) }
        }
        return ended
    }

    /// The writes that take one record forward.
    struct Step {
        var writes: [RecordWrite]
        /// Whether the writes end the record (its kind's own writes).
        var ends: Bool
        /// Whether the writes touch the deadline index only (the record stays as it is): the sweeper gathers those
        /// of a page into one batch.
        var indexOnly: Bool
    }

    /// `record` (nil: gone) taken forward at `now`: its kind's expiry, then, for an indexed kind, its deadline
    /// entry moved to the deadline of the record as those writes leave it (dropped when it has none), in one batch.
    /// `entry`: the entry that named it (nil while the kind is read whole).
    static func step(
        _ record: Record?, entry: Record?, lifetime: RecordLifetime,
        expire: @Sendable (Record, Int64) async throws -> [RecordWrite]?, now: Int64
    ) async throws -> Step {
        guard let record else {
            let drop = entry.map {
                [RecordWrite.delete(collection: $0.collection, id: $0.id, condition: .version($0.version))]
            }
            return Step(writes: drop ?? [], ends: false, indexOnly: true)
        }
        let writes = try await expire(record, now) ?? []
        let ends = !writes.isEmpty
        guard let deadlines = lifetime.deadlines else { return Step(writes: writes, ends: ends, indexOnly: false) }
        // The record as the writes leave it: replaced, deleted or as it is.
        var following: Record? = record
        for write in writes where write.collection == record.collection && write.id == record.id {
            switch write {
            case .put(_, _, let value, _):
                following = Record(
                    collection: record.collection, id: record.id, version: record.version &+ 1, value: value)
            case .delete: following = nil
            }
        }
        // A deadline not later than now is filed at the next second: the next round takes it, and the round that
        // filed it, reading the index in deadline order, does not meet the same record again.
        let next = try following.flatMap { try deadlines.next($0, now) }.map { max($0, now + 1) }
        var filings: [RecordWrite] = []
        if next.map({ DeadlineIndex.entryId(at: $0, recordId: record.id) }) != entry?.id {
            if let entry {
                filings.append(.delete(collection: entry.collection, id: entry.id, condition: .version(entry.version)))
            }
            if let next { filings.append(deadlines.index.entry(for: record.id, at: next, condition: .unconditional)) }
        }
        // A record the writes put under another id of the kind (moved to its keyed id) is filed at its deadline too.
        for case .put(let collection, let id, let value, _) in writes
        where collection == record.collection && id != record.id {
            let moved = Record(collection: collection, id: id, version: 1, value: value)
            if let deadline = try deadlines.next(moved, now) {
                filings.append(deadlines.index.entry(for: id, at: max(deadline, now + 1), condition: .unconditional))
            }
        }
        return Step(writes: writes + filings, ends: ends, indexOnly: !ends)
    }

    /// Commits one batch; a record or entry changed meanwhile is skipped (the next round sees it again).
    /// - Returns: whether the batch was written (false: nothing to write, or a conflict).
    @discardableResult
    private func apply(_ writes: [RecordWrite], report: inout SweepReport) async throws -> Bool {
        guard !writes.isEmpty else { return false }
        do {
            try await store.commit(writes)
            return true
        } catch let error as StoreError where error.code == .conflict {
            report.skipped += 1
            return false
        }
    }

    /// When an indexed kind was last read whole (its entries complete as of then): the Unix seconds that its
    /// `sweeper-state` record holds, in decimal; nil when never (or unreadable). Read once, then remembered.
    private func lastWholeRead(_ lifetime: RecordLifetime) async throws -> Int64? {
        if let known = state.withLock({ $0.lastWholeRead[lifetime.collection] }) { return known }
        guard let seconds = try await timeMark(lifetime.collection) else { return nil }
        state.withLock { $0.lastWholeRead[lifetime.collection] = seconds }
        return seconds
    }

    private func markWholeRead(_ lifetime: RecordLifetime, at now: Int64) async throws {
        try await markTime(lifetime.collection, now)
        state.withLock { $0.lastWholeRead[lifetime.collection] = now }
    }

    /// The `sweeper-state` id of when a kind with a ``RecordLifetime/sweepInterval`` was last read whole.
    static func sweptMarkId(_ lifetime: RecordLifetime) -> String { "swept:" + lifetime.collection }

    /// The `sweeper-state` id of the counts the last round published.
    static let countsId = "counts"

    /// The Unix seconds a `sweeper-state` record holds, in decimal; nil when absent (or unreadable).
    private func timeMark(_ id: String) async throws -> Int64? {
        guard let record = try await store.get(Collections.sweeperState, id: id) else { return nil }
        return Int64(String(decoding: record.value, as: UTF8.self))
    }

    private func markTime(_ id: String, _ seconds: Int64) async throws {
        try await store.put(
            Collections.sweeperState, id: id, value: Array(String(seconds).utf8), condition: .unconditional)
    }

    /// The counts a round published: when, and each kind's; and when they were counted (Unix seconds) and how long
    /// that took (seconds), absent from the records of older builds.
    private struct PublishedCounts: Codable {
        var at: Int64
        var counts: [String: Int]
        var countedAt: Double?
        var countSeconds: Double?
    }

    /// Publishes a round's counts in `sweeper-state`, for the daemons that do not lead the sweep and for the next
    /// round's leader.
    private func publishCounts(_ counted: PublishedCounts, at now: Int64) async throws {
        var counted = counted
        counted.at = now
        let value = try JSONEncoder().encode(counted)
        try await store.put(Collections.sweeperState, id: Self.countsId, value: Array(value), condition: .unconditional)
    }

    /// The counts the last round published, or nil (none, or unreadable).
    private func publishedCounts() async throws -> PublishedCounts? {
        guard let record = try await store.get(Collections.sweeperState, id: Self.countsId) else { return nil }
        return try? JSONDecoder().decode(PublishedCounts.self, from: Data(record.value))
    }

    /// The counts a round ends with: while the published ones are not due to be counted again (``countRestPerWork``),
    /// those less what the round `ended` (records added meanwhile show at the next count); else a new count.
    private func roundCounts(ended: [String: Int]) async throws -> PublishedCounts {
        let now = clock.now.timeIntervalSince1970
        let kinds = Set(lifetimes.map(\.collection))
        if var last = try await publishedCounts(), let countedAt = last.countedAt, let seconds = last.countSeconds,
            seconds > Self.cheapCount, countedAt <= now, now < countedAt + seconds * Double(countRestPerWork),
            kinds.isSubset(of: last.counts.keys)
        {
            last.counts = last.counts.filter { kinds.contains($0.key) }
            for (collection, count) in ended {
                last.counts[collection] = max(0, (last.counts[collection] ?? 0) - count)
            }
            return last
        }
        let start = ContinuousClock.now
        let counts = try await counts()
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        return PublishedCounts(at: 0, counts: counts, countedAt: now, countSeconds: seconds)
    }

    /// The counts `/metrics` shows from a daemon's start: the published ones while a slow count is not due again
    /// (``countRestPerWork``), as a round would take them, so that a rolling restart of several daemons on a large
    /// store does not walk every collection once per daemon; else a count.
    public func countsAtStart() async throws {
        let counted = try await roundCounts(ended: [:])
        state.withLock { $0.remaining = counted.counts }
    }

    /// Takes the counts the leading daemon's last round published (one read) for `/metrics`; counts the store
    /// itself only when none were published in the last `maximumAge` seconds (or they cannot be read). With several
    /// daemons on one database, only the leader then walks the collections each round.
    public func adoptPublishedCounts(maximumAge: Int64 = 600) async throws {
        let now = Int64(clock.now.timeIntervalSince1970.rounded(.down))
        if let published = try await publishedCounts(), published.at <= now, now - published.at <= maximumAge {
            let kinds = Set(lifetimes.map(\.collection))
            let counts = published.counts.filter { kinds.contains($0.key) }
            state.withLock { $0.remaining = counts }
            return
        }
        _ = try await counts()
    }

    /// Records as complete (read whole now) the deadline index of every indexed kind that has no record yet (a new
    /// store): every record of it will be written by a build that files it, so the first round need not read the
    /// kind whole. The daemon calls this as it starts, before the first round.
    /// - Returns: the kinds marked.
    @discardableResult
    public func markEmptyIndexedKinds() async throws -> [String] {
        var marked: [String] = []
        let now = Int64(clock.now.timeIntervalSince1970.rounded(.down))
        for lifetime in lifetimes where lifetime.deadlines != nil {
            guard try await lastWholeRead(lifetime) == nil,
                try await store.count(lifetime.collection, prefix: "", after: nil, limit: 1) == 0
            else { continue }
            try await markWholeRead(lifetime, at: now)
            marked.append(lifetime.collection)
        }
        return marked
    }

    /// The lifetime of the sweeper's own records.
    public static let stateLifetime = RecordLifetime(
        kept: Collections.sweeperState,
        "one record per kind found through a deadline index or swept at most hourly (`swept:<kind>`): when it was last "
            + "read whole; and the last round's counts (`counts`), which the daemons that do not lead the sweep show")

    /// Counts every kind from the store's index (no value is read) and keeps the counts for `/metrics`.
    @discardableResult
    public func counts() async throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for lifetime in lifetimes {
            counts[lifetime.collection] = try await store.count(
                lifetime.collection, prefix: "", after: nil, limit: 1 << 30)
        }
        state.withLock { $0.remaining = counts }
        return counts
    }

    /// Prometheus text: `cardvault_records{kind}` (as of the last count, less the ends since) and
    /// `cardvault_records_expired_total{kind}`.
    public func metricsText() -> String {
        let snapshot = state.withLock { $0 }
        var text = "# HELP cardvault_records Records in the store by kind (collection), as of the last count "
        text += "(each sweep round, less often when counting takes long), less those ended since.\n"
        text += "# TYPE cardvault_records gauge\n"
        for lifetime in lifetimes {
            text +=
                "cardvault_records{kind=\"\(lifetime.collection)\"} \(snapshot.remaining[lifetime.collection] ?? 0)\n"
        }
        text += "# HELP cardvault_records_expired_total Records the sweeper ended at the end of their lifetime.\n"
        text += "# TYPE cardvault_records_expired_total counter\n"
        for lifetime in lifetimes where lifetime.expire != nil {
            text +=
                "cardvault_records_expired_total{kind=\"\(lifetime.collection)\"} "
                + "\(snapshot.expiredTotal[lifetime.collection] ?? 0)\n"
        }
        text +=
            "# HELP cardvault_sweep_rounds_total Sweep rounds finished.\n# TYPE cardvault_sweep_rounds_total counter\n"
        text += "cardvault_sweep_rounds_total \(snapshot.rounds)\n"
        return text
    }
}

/// Counts once (or takes the published counts, ``RecordSweeper/countsAtStart()``), then runs the periodic sweep.
private struct SweeperService: Service {
    let sweeper: RecordSweeper
    let periodic: PeriodicService
    var name: String { periodic.name }

    func run() async throws {
        _ = try? await sweeper.markEmptyIndexedKinds()
        try? await sweeper.countsAtStart()
        try await periodic.run()
    }
}
