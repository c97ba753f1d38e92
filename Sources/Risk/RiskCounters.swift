import VaultCore
import VaultStore

/// Per-card, per-user, per-IP and per-device counters of the risk history, kept in memory and updated by each
/// committed pay-in, so that scoring a pay-in reads counters instead of scanning and decrypting the history.
///
/// The history records in the store (``PayInRiskHistory``) stay the durable truth: a key's counter is seeded
/// from them the first time it is needed (one scan, as every pay-in made before), and from then on each commit
/// that writes history records adds its events. Events carry their transaction id, so an event that both the
/// seeding scan and a commit report is counted once. While a key is being seeded, the events committed for it
/// are held and merged when the scan is in. Events older than the window are dropped as they are met; at most
/// ``PayInRiskHistory/countLimit`` are kept per key (the rules see no difference above that). At most
/// `maximumKeys` keys are held; when full, the least recently used half is forgotten (and seeded again when met).
///
/// With several daemons on one store (PostgreSQL), a commit made through another daemon never reaches this one's
/// counters: `refreshAfter` (seconds) then makes a counter older than that be seeded again from the history, so
/// that a shopper spread over the daemons is counted whole, at most that many seconds late. One caller reads the
/// history again; callers meanwhile read the counter as held. Each key has its own phase within the period (from a
/// hash of the key), so that the counters seeded together are not all read again in the same instant. A store one
/// daemon owns needs no refresh (nil).
///
/// A refresh reads only the history's tail: the events stamped from `overlap` seconds before the counter's last scan
/// on (the counter keeps the older ones), so that its cost follows the key's recent traffic, not the length of its
/// history. An event committed more than `overlap` seconds after its stamp (a database stall), or stamped by a
/// daemon whose clock is that far off, is missed by those; every `fullRefreshAfter` seconds a refresh reads the
/// whole history again, and counts it.
public final class RiskCounters: Sendable {
    /// One attempt, failure or success of a transaction.
    public struct Event: Sendable, Equatable {
        public var stamp: Int64
        public var transactionId: String
        /// The card fingerprint (device attempts: for the distinct cards) or the amount (successes), as text.
        public var detail: String
        /// `detail` read as an amount (successes), once when the event is made; nil when it is not a number.
        public let amount: Int64?

        public init(stamp: Int64, transactionId: String, detail: String) {
            self.stamp = stamp
            self.transactionId = transactionId
            self.detail = detail
            self.amount = Int64(detail)
        }
    }

    /// What a key's counter holds: the events seen, newest last.
    struct Counter: Sendable {
        var events: [Event] = []
        var ids: Set<String> = []
        var lastUse: UInt64 = 0

        mutating func add(_ event: Event, limit: Int) {
            guard ids.insert(event.transactionId).inserted else { return }
            if let last = events.last, last.stamp > event.stamp {
                let index = events.firstIndex { $0.stamp > event.stamp } ?? events.endIndex
                events.insert(event, at: index)
            } else {
                events.append(event)
            }
            if events.count > limit * 2 { trim(keeping: limit) }
        }

        /// Keeps the `limit` newest events.
        mutating func trim(keeping limit: Int) {
            guard events.count > limit else { return }
            for event in events.prefix(events.count - limit) { ids.remove(event.transactionId) }
            events.removeFirst(events.count - limit)
        }

        /// Drops the events before `since` (window counters only).
        mutating func prune(before since: Int64) {
            guard let first = events.first, first.stamp < since else { return }
            let keep = events.firstIndex { $0.stamp >= since } ?? events.endIndex
            for event in events[..<keep] { ids.remove(event.transactionId) }
            events.removeFirst(keep)
        }
    }

    /// A ready counter, changed in place (one dictionary lookup per use, no copy of its events). Only touched with
    /// the state's lock held.
    final class Box: @unchecked Sendable {
        var counter: Counter
        /// When the history was last scanned for this counter (the caller's clock, milliseconds).
        let seededAt: Int64
        /// When the whole history was last scanned for it (`seededAt` or earlier; milliseconds).
        let fullySeededAt: Int64
        /// Where in each refresh period this key's period turns (milliseconds, below the period).
        let phase: Int64
        /// A caller is reading the history again for this stale counter; the others read the counter as held
        /// meanwhile (see ``RiskCounters/read(_:since:nowMillis:seed:_:)``).
        var refreshing = false
        init(_ counter: Counter, seededAt: Int64, fullySeededAt: Int64, phase: Int64) {
            self.counter = counter
            self.seededAt = seededAt
            self.fullySeededAt = fullySeededAt
            self.phase = phase
        }
    }

    enum Slot: Sendable {
        /// A scan is reading the history; events committed meanwhile wait here.
        case seeding([Event])
        case ready(Box)
    }

    struct State: Sendable {
        var slots: [String: Slot] = [:]
        var clock: UInt64 = 0
    }

    package let limit: Int
    package let maximumKeys: Int
    /// Seconds after which a counter is seeded again from the history (nil: never; see the type's overview).
    package let refreshAfter: Int64?
    /// Seconds before the last scan that a refresh reads again (see the type's overview).
    package let overlap: Int64
    /// Seconds after which a refresh reads the whole history again.
    package let fullRefreshAfter: Int64
    private let state = Locked(State())
    /// Most events counted per key; more than this all look alike to the rules.
    package static let defaultLimit = 1000

    package init(
        limit: Int = RiskCounters.defaultLimit, maximumKeys: Int = 200_000, refreshAfter: Int64? = nil,
        overlap: Int64 = 5, fullRefreshAfter: Int64 = 60
    ) {
        self.limit = limit
        self.maximumKeys = maximumKeys
        self.refreshAfter = refreshAfter
        self.overlap = overlap
        self.fullRefreshAfter = fullRefreshAfter
    }

    /// The events of `key` (within `since…` when given, in seconds like the events' stamps), seeding the counter with
    /// `seed` (the history scan: of the events stamped from `from` on, or of all when `from` is nil) when it is not
    /// held yet, or is stale at `now` (milliseconds since 1970, the caller's clock).
    package func events(
        _ key: String, since: Int64?, nowMillis now: Int64 = 0, seed: (_ from: Int64?) async throws -> [Event]
    ) async throws -> [Event] {
        try await summary(key, since: since, nowMillis: now, seed: seed) { $0 }
    }

    /// What `summarize` makes of the events of `key` (within `since…` when given), run with the lock held so that
    /// the events are read where they are (no copy for a count); seeds the counter with `seed` as
    /// ``events(_:since:nowMillis:seed:)`` does.
    ///
    /// Inlined into the caller, over ``read(_:since:nowMillis:seed:_:)``, which is not generic: a generic `async`
    /// function of another module runs unspecialized, looking up its types' metadata on every call. Public, not
    /// `package`: this toolchain (Swift 6.3) does not inline or specialize `@inlinable package` functions across
    /// modules.
    @inlinable
    public func summary<Summary: Sendable>(
        _ key: String, since: Int64?, nowMillis now: Int64 = 0, seed: (_ from: Int64?) async throws -> [Event],
        _ summarize: ([Event]) -> Summary
    ) async throws -> Summary {
        var summary: Summary?
        try await read(key, since: since, nowMillis: now, seed: seed) { summary = summarize($0) }
        return summary!
    }

    /// What a read does after its look at the state.
    private enum Next {
        /// The counter is held and fresh: `body` has run.
        case held
        /// Scan the history: the events stamped from `from` on, or all of them when nil.
        case scan(from: Int64?)
    }

    /// Calls `body` once with the events of `key`, as ``summary(_:since:nowMillis:seed:_:)`` describes.
    public func read(
        _ key: String, since: Int64?, nowMillis now: Int64 = 0, seed: (_ from: Int64?) async throws -> [Event],
        _ body: ([Event]) -> Void
    ) async throws {
        let next = state.withLock { state -> Next in
            state.clock += 1
            switch state.slots[key] {
            case .ready(let box) where !box.refreshing && isStale(box, now: now):
                // Seeded again: the scan reads what every daemon committed (this one's events are in it too). One
                // caller reads; the others go on with the counter as held (at most one scan late), instead of each
                // scanning the same history at once (a key every connection meets, such as a shared device, was
                // read by all of them every second).
                box.refreshing = true
                let whole = now - box.fullySeededAt >= fullRefreshAfter * 1000 || now < box.fullySeededAt
                return .scan(from: whole ? nil : box.seededAt / 1000 - overlap)
            case .ready(let box):
                if let since { box.counter.prune(before: since) }
                box.counter.trim(keeping: limit)
                box.counter.lastUse = state.clock
                body(box.counter.events)
                return .held
            case .seeding:
                return .scan(from: nil)
            case nil:
                makeRoom(&state)
                state.slots[key] = .seeding([])
                return .scan(from: nil)
            }
        }
        guard case .scan(let from) = next else { return }
        // Seeding (ours, or another caller's that is still running: then this one reads the store too).
        let scanned: [Event]
        do {
            scanned = try await seed(from)
        } catch {
            abandon(key)
            throw error
        }
        state.withLock { state in
            var fullySeededAt = now
            var counter = Counter()
            switch state.slots[key] {
            case .seeding(let waiting):
                for event in scanned { counter.add(event, limit: limit) }
                for event in waiting { counter.add(event, limit: limit) }
            case .ready(let current):
                // A refresh (or a seeding that another caller finished first): the held counter, with what was
                // committed meanwhile, takes the events the scan found (taken out of the box, not copied).
                swap(&counter, &current.counter)
                for event in scanned { counter.add(event, limit: limit) }
                if from != nil { fullySeededAt = current.fullySeededAt }
            case nil:
                for event in scanned { counter.add(event, limit: limit) }
            }
            counter.trim(keeping: limit)
            if let since { counter.prune(before: since) }
            state.clock += 1
            counter.lastUse = state.clock
            state.slots[key] = .ready(
                Box(counter, seededAt: now, fullySeededAt: fullySeededAt, phase: phase(of: key)))
            body(counter.events)
        }
    }

    /// One key's counter and where its history lies: the records of `collection` under `prefix`, within
    /// `since…` when given (seconds, like the events' stamps).
    public struct Seeding: Sendable {
        public var key: String
        public var since: Int64?
        public var collection: String
        public var prefix: String

        public init(key: String, since: Int64?, collection: String, prefix: String) {
            self.key = key
            self.since = since
            self.collection = collection
            self.prefix = prefix
        }

        /// Where a scan of its events stamped from `from` on (or of all within the window when nil) starts.
        public func first(from: Int64?) -> Int64? {
            guard let since else { return from }
            guard let from else { return since }
            return max(since, from)
        }
    }

    /// Reads the history for each of these counters that is not held or is stale at `now`, all at once, with `scan`
    /// (as `seed` in ``read(_:since:nowMillis:seed:_:)``); a pay-in's counters, seeded one after the other, took one
    /// store round trip each. The reads that follow then find them held. Nothing is read when all are held and fresh.
    ///
    /// On a store one daemon owns (no `refreshAfter`) it does nothing: a counter is seeded once, by the read that
    /// first meets it, from local records, and checking them all first would cost a lookup per counter on every
    /// pay-in.
    public func seed(
        _ counters: [Seeding], nowMillis now: Int64,
        scan: @escaping @Sendable (_ counter: Seeding, _ from: Int64?) async throws -> [Event]
    ) async throws {
        guard refreshAfter != nil else { return }
        let due = state.withLock { state in
            counters.filter { counter in
                switch state.slots[counter.key] {
                case .ready(let box): !box.refreshing && isStale(box, now: now)
                case .seeding, nil: true
                }
            }
        }
        /// Seeds one counter (what it holds is read later, by the caller's reads).
        @Sendable func seedOne(_ counter: Seeding) async throws {
            try await read(
                counter.key, since: counter.since, nowMillis: now, seed: { try await scan(counter, $0) }, { _ in })
        }
        if due.count == 1 {
            try await seedOne(due[0])
            return
        }
        guard !due.isEmpty else { return }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for counter in due {
                group.addTask { try await seedOne(counter) }
            }
            try await group.waitForAll()
        }
    }

    /// True when the key's period turned since it was read (at most `refreshAfter` after), or the clock went back.
    private func isStale(_ box: Box, now: Int64) -> Bool {
        guard let refreshAfter, refreshAfter > 0 else { return refreshAfter != nil }
        let period = refreshAfter * 1000
        return now < box.seededAt || (now + box.phase) / period != (box.seededAt + box.phase) / period
    }

    /// The key's phase within the refresh period (milliseconds).
    private func phase(of key: String) -> Int64 {
        guard let refreshAfter, refreshAfter > 0 else { return 0 }
        return Int64(UInt64(truncatingIfNeeded: key.hashValue) % UInt64(refreshAfter * 1000))
    }

    /// Forgets a key whose seeding failed, so that the next caller seeds it again (a stale counter whose refresh
    /// failed is kept, and the next caller reads the history again).
    private func abandon(_ key: String) {
        state.withLock { state in
            switch state.slots[key] {
            case .seeding: state.slots[key] = nil
            case .ready(let box): box.refreshing = false
            case nil: break
            }
        }
    }

    /// Adds events that a commit made durable. Keys not held are left alone: their seeding scan will read them.
    package func record(_ events: [(key: String, event: Event)]) {
        guard !events.isEmpty else { return }
        state.withLock { state in
            for (key, event) in events {
                switch state.slots[key] {
                case .ready(let box):
                    box.counter.add(event, limit: limit)
                case .seeding(var waiting):
                    waiting.append(event)
                    state.slots[key] = .seeding(waiting)
                case nil:
                    continue
                }
            }
        }
    }

    private func makeRoom(_ state: inout State) {
        guard state.slots.count >= maximumKeys else { return }
        var uses: [(UInt64, String)] = []
        for (key, slot) in state.slots {
            // A counter being refreshed stays: its scan reads only the history's tail, the box holds the rest.
            if case .ready(let box) = slot, !box.refreshing { uses.append((box.counter.lastUse, key)) }
        }
        uses.sort { $0.0 < $1.0 }
        for (_, key) in uses.prefix(max(1, uses.count / 2)) { state.slots[key] = nil }
    }
}
