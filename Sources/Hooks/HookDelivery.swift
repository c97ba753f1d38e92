import Foundation
public import OutboundHTTP
import Payments
public import VaultCore
import VaultStore

/// How one delivery attempt ended.
public enum HookAttemptResult: Sendable, Equatable {
    /// The receiver answered 200 in time.
    case delivered
    /// Anything else: another status, a timeout, a refused or unreachable destination. `reason` is a short
    /// description (`status 500`, `timeout`), never a body or header.
    case failed(reason: String)
    /// Not attempted (the daemon is stopping): the event keeps its place and its schedule.
    case notAttempted
}

/// Sends one delivery: `GET url` with the signature header.
public protocol HookTransport: Sendable {
    func get(_ url: DestinationURL, signature: String) async -> HookAttemptResult
}

/// The real transport: the outbound client (libcurl), DNS resolved once per delivery and checked against the
/// policy, connected to by those addresses only, no redirects, capped bodies, the client's timeout (2 s).
public struct OutboundHookTransport: HookTransport {
    public let client: OutboundHTTPClient

    public init(client: OutboundHTTPClient) {
        self.client = client
    }

    public func get(_ url: DestinationURL, signature: String) async -> HookAttemptResult {
        do {
            let addresses = try await client.checkedAddresses(for: url)
            let response = try await client.send(
                OutboundRequest(
                    url: url, addresses: addresses, method: "GET",
                    headers: [
                        OutboundHeader(
                            name: HookSignature.headerName, value: WipedBuffer(copying: Array(signature.utf8)))
                    ]
                ))
            return response.status == 200 ? .delivered : .failed(reason: "status \(response.status)")
        } catch {
            if error.code == .notRunning { return .notAttempted }
            return .failed(reason: error.code.description)
        }
    }
}

/// Takes events from the durable outbox (``Collections/eventOutbox``) and delivers them to the clients' hooks:
/// at least once (an entry leaves the outbox only after a 200, so a crash or SIGKILL mid-delivery sends it again
/// after restart), in order per resource (a resource's later events wait until its earlier one is delivered or
/// given up), retried on ``HookSchedule``, with at most ``maxConcurrentPerDestination`` requests in flight to one
/// host. Each ``round()`` is one pass; ``services(interval:leadership:logger:)`` runs rounds in the daemon (on one
/// daemon at a time when several share a database).
public final class HookDeliveryEngine: Sendable {
    public let hooks: HookService
    public let transport: any HookTransport
    public let schedule: HookSchedule
    public let metrics: HookMetrics
    public let maxConcurrentPerDestination: Int
    /// Outbox entries read per page (a round reads every page, so a backlog never hides later events).
    public let batchSize: Int
    private let limiter: DestinationLimiter

    public init(
        hooks: HookService, transport: any HookTransport, schedule: HookSchedule = HookSchedule(),
        metrics: HookMetrics = HookMetrics(), maxConcurrentPerDestination: Int = 4, batchSize: Int = 500
    ) {
        self.hooks = hooks
        self.transport = transport
        self.schedule = schedule
        self.metrics = metrics
        self.maxConcurrentPerDestination = max(1, maxConcurrentPerDestination)
        self.batchSize = max(1, batchSize)
        self.limiter = DestinationLimiter(limit: max(1, maxConcurrentPerDestination))
    }

    private var store: any RecordStore { hooks.environment.store }
    private var logger: Logger { hooks.environment.logger }
    private var now: Int64 { Int64(hooks.environment.clock.now.timeIntervalSince1970.rounded(.down)) }

    /// What a round did.
    public struct RoundReport: Sendable, Equatable {
        public var delivered = 0
        public var failed = 0
        public var gaveUp = 0
        /// Events with no enabled hook, removed from the outbox.
        public var dropped = 0
        public init() {}
    }

    /// One entry of the outbox with its record version.
    struct Entry: Sendable {
        var state: HookDeliveryState
        var version: UInt64
    }

    /// One pass over the outbox: every due event whose resource has no earlier event waiting is attempted.
    @discardableResult
    public func round() async throws -> RoundReport {
        let now = self.now
        var total = RoundReport()
        var pending = 0
        var oldest: Int64?
        // Resources whose earlier event is still waiting: their later events wait too, on every later page.
        var blocked = Set<String>()
        var hooksByType: [String: Stored<Hook>] = [:]
        var secrets: [String: String] = [:]
        var after: String?
        while true {
            let records = try await store.scan(Collections.eventOutbox, prefix: "", after: after, limit: batchSize)
            pending += records.count
            var chains: [(key: String, entries: [Entry])] = []
            var chainIndex: [String: Int] = [:]
            for record in records {
                guard let state = try? RecordCoding.decode(HookDeliveryState.self, from: record) else {
                    logger.warning("undecodable outbox entry kept", ["service": .string("hook-delivery")])
                    continue
                }
                oldest = min(oldest ?? state.date, state.date)
                let key = state.clientId + ":" + state.resourceId
                guard !blocked.contains(key) else { continue }
                if let index = chainIndex[key] {
                    chains[index].entries.append(Entry(state: state, version: record.version))
                } else {
                    chainIndex[key] = chains.count
                    chains.append((key, [Entry(state: state, version: record.version)]))
                }
                // Hooks and secrets, read once per round for every client and type seen.
                let hookKey = HookService.eventKey(state.clientId, state.eventType)
                if hooksByType[hookKey] == nil,
                    let hook = try await hooks.hook(clientId: state.clientId, type: state.eventType)
                {
                    hooksByType[hookKey] = hook
                }
                if secrets[state.clientId] == nil, let secret = try await hooks.secret(clientId: state.clientId) {
                    secrets[state.clientId] = secret
                }
            }
            let inputs = RoundInputs(hooks: hooksByType, secrets: secrets, now: now)
            let outcomes = await withTaskGroup(of: ChainOutcome.self) { group in
                for chain in chains {
                    group.addTask { await self.run(chain.key, chain.entries, inputs: inputs) }
                }
                var outcomes: [ChainOutcome] = []
                for await outcome in group { outcomes.append(outcome) }
                return outcomes
            }
            var drops: [Entry] = []
            for outcome in outcomes {
                total.delivered += outcome.report.delivered
                total.failed += outcome.report.failed
                total.gaveUp += outcome.report.gaveUp
                total.dropped += outcome.report.dropped
                drops += outcome.drops
                if outcome.stopped { blocked.insert(outcome.key) }
            }
            await removeAll(drops)
            guard records.count == batchSize, let last = records.last else { break }
            after = last.id
        }
        metrics.recordOutbox(pending: pending, oldestDate: oldest, now: now)
        return total
    }

    struct RoundInputs: Sendable {
        var hooks: [String: Stored<Hook>]
        var secrets: [String: String]
        var now: Int64
    }

    /// How one resource's chain of events ended in a round.
    struct ChainOutcome: Sendable {
        var key: String
        var report: RoundReport
        /// A later event of the resource must wait (one was not due, failed, or was not attempted).
        var stopped: Bool
        /// Entries without an enabled hook at the end of the chain, for the round's one batch of deletes.
        var drops: [Entry]
    }

    /// A resource's events, in order, until one is not due or fails. Entries without an enabled hook are dropped:
    /// those at the end of the chain are handed back for one delete batch of the whole page, those before an
    /// attempt are deleted before it (so that a crash never leaves an earlier event behind a delivered later one).
    private func run(_ key: String, _ chain: [Entry], inputs: RoundInputs) async -> ChainOutcome {
        var report = RoundReport()
        var drops: [Entry] = []
        // Drops are deleted before every attempt, so none are pending when the chain stops.
        func stop() -> ChainOutcome { ChainOutcome(key: key, report: report, stopped: true, drops: []) }
        for entry in chain {
            let state = entry.state
            let hook = inputs.hooks[HookService.eventKey(state.clientId, state.eventType)]
            do {
                guard let hook, hook.value.status == .enabled else {
                    drops.append(entry)
                    report.dropped += 1
                    continue
                }
                if !drops.isEmpty {
                    guard await removeAll(drops) else { return stop() }
                    drops = []
                }
                guard hook.value.validity == .valid else {
                    try await giveUp(entry, reason: state.lastFailure ?? "hook INVALID", hookInvalid: true)
                    report.gaveUp += 1
                    continue
                }
                if let next = state.nextAttemptAt, next > inputs.now { return stop() }
                guard let secret = inputs.secrets[state.clientId] else {
                    try await recordFailure(entry, reason: "no hook secret", now: inputs.now, report: &report)
                    return stop()
                }
                guard let (url, query) = Self.deliveryURL(hook.value, state: state, policy: hooks.policy) else {
                    try await recordFailure(entry, reason: "invalid url", now: inputs.now, report: &report)
                    return stop()
                }
                let timestamp = now
                let signature = HookSignature.header(query: query, timestamp: timestamp, secret: secret)
                await limiter.acquire(url.host)
                let result = await transport.get(url, signature: signature)
                limiter.release(url.host)
                switch result {
                case .delivered:
                    try await remove(entry)
                    report.delivered += 1
                    metrics.recordDelivery(lagSeconds: max(0, now - state.date))
                case .failed(let reason):
                    try await recordFailure(entry, reason: reason, now: now, report: &report)
                    return stop()
                case .notAttempted:
                    return stop()
                }
            } catch {
                logger.warning(
                    "hook delivery bookkeeping failed",
                    ["service": .string("hook-delivery"), "error": .string(String(describing: type(of: error)))])
                return stop()
            }
        }
        return ChainOutcome(key: key, report: report, stopped: false, drops: drops)
    }

    /// The hook's URL with `EventType`, `RessourceId` (Mangopay's spelling) and `Date` added to its query, and
    /// the whole query string as sent (what the signature covers).
    static func deliveryURL(
        _ hook: Hook, state: HookDeliveryState, policy: HookDestinationPolicy
    ) -> (DestinationURL, String)? {
        guard let base = try? policy.parse(hook.url) else { return nil }
        let added =
            "EventType=" + state.eventType.rawValue + "&RessourceId=" + percentEncoded(state.resourceId) + "&Date="
            + String(state.date)
        let query = base.query.map { $0.isEmpty ? added : $0 + "&" + added } ?? added
        var text = hook.url
        if let hash = text.firstIndex(of: "#") { text = String(text[..<hash]) }
        if let mark = text.firstIndex(of: "?") { text = String(text[..<mark]) }
        guard let url = try? policy.parse(text + "?" + query) else { return nil }
        return (url, query)
    }

    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            if (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2D || byte == 0x5F || byte == 0x2E || byte == 0x7E
            {
                out.unicodeScalars.append(UnicodeScalar(byte))
            } else {
                out += "%" + HookSignature.hex([byte]).uppercased()
            }
        }
        return out
    }

    /// Deletes `entries` from the outbox in batches of up to ``batchSize``, each at the version read. A batch that
    /// conflicts (an entry was queued again meanwhile) is deleted entry by entry, so that the others still go; a
    /// failure to write leaves the entries for the next round, which drops them again (and returns false).
    @discardableResult
    private func removeAll(_ entries: [Entry]) async -> Bool {
        var start = 0
        while start < entries.count {
            let part = entries[start..<min(entries.count, start + batchSize)]
            start += part.count
            do {
                if part.count == 1 {
                    try await remove(part[part.startIndex])
                    continue
                }
                do {
                    try await store.commit(
                        part.map {
                            .delete(
                                collection: Collections.eventOutbox, id: $0.state.id, condition: .version($0.version))
                        })
                } catch let error as StoreError where error.code == .conflict {
                    for entry in part { try await remove(entry) }
                }
            } catch {
                logger.warning(
                    "hook outbox entries kept for the next round",
                    ["service": .string("hook-delivery"), "error": .string(String(describing: type(of: error)))])
                return false
            }
        }
        return true
    }

    private func remove(_ entry: Entry) async throws {
        do {
            try await store.commit([
                .delete(collection: Collections.eventOutbox, id: entry.state.id, condition: .version(entry.version))
            ])
        } catch let error as StoreError where error.code == .conflict {
            // Queued again meanwhile (a replay): it is sent again, which at-least-once allows.
        }
    }

    private func recordFailure(_ entry: Entry, reason: String, now: Int64, report: inout RoundReport) async throws {
        var state = entry.state
        let failures = Int64(state.failures ?? 0) + 1
        let first = state.firstAttemptAt ?? now
        metrics.recordFailure()
        guard let next = schedule.nextAttempt(afterFailures: failures, firstAttempt: first, now: now) else {
            state.failures = Int(failures)
            state.firstAttemptAt = first
            try await giveUp(Entry(state: state, version: entry.version), reason: reason, hookInvalid: false)
            report.gaveUp += 1
            return
        }
        state.failures = Int(failures)
        state.firstAttemptAt = first
        state.nextAttemptAt = next
        state.lastFailure = reason
        report.failed += 1
        logger.info(
            "hook delivery failed",
            [
                "service": .string("hook-delivery"), "clientId": .string(state.clientId),
                "eventType": .string(state.eventType.rawValue), "resourceId": .string(state.resourceId),
                "failures": .int(Int(failures)), "reason": .string(reason), "nextAttemptAt": .int(Int(next)),
            ])
        do {
            try await store.commit([
                .put(
                    collection: Collections.eventOutbox, id: state.id, value: try RecordCoding.encode(state),
                    condition: .version(entry.version))
            ])
        } catch let error as StoreError where error.code == .conflict {
            // Queued again meanwhile: the new entry starts its own schedule.
        }
    }

    /// Moves the event to ``Collections/hookFailures`` (kept for the operator) and, after a full schedule of
    /// failures, makes the hook INVALID, in one batch.
    private func giveUp(_ entry: Entry, reason: String, hookInvalid: Bool) async throws {
        var state = entry.state
        state.lastFailure = reason
        state.givenUpAt = now
        state.nextAttemptAt = nil
        try await retryingOnConflict(
            attempts: 5, exhausted: PaymentsError(.concurrentChange, "the hook kept changing")
        ) {
            var writes: [RecordWrite] = [
                .delete(collection: Collections.eventOutbox, id: state.id, condition: .version(entry.version)),
                .put(
                    collection: Collections.hookFailures, id: state.id, value: try RecordCoding.encode(state),
                    condition: .unconditional),
            ]
            if !hookInvalid, let found = try await hooks.hook(clientId: state.clientId, type: state.eventType),
                found.value.validity == .valid
            {
                var hook = found.value
                hook.validity = .invalid
                writes.append(
                    .put(
                        collection: Collections.hooks, id: HookService.hookKey(hook.clientId, hook.id),
                        value: try RecordCoding.encode(hook), condition: .version(found.version)))
            }
            do {
                try await store.commit(writes)
            } catch let error as StoreError where error.code == .conflict {
                // The outbox entry changed (a replay queued it again): leave it to the next round.
                let current = try await store.get(Collections.eventOutbox, id: state.id)
                if current?.version != entry.version { return }
                throw error
            }
        }
        metrics.recordGiveUp()
        logger.warning(
            "hook delivery given up; event kept for the operator (cardvault hooks list)",
            [
                "service": .string("hook-delivery"), "clientId": .string(state.clientId),
                "eventType": .string(state.eventType.rawValue), "resourceId": .string(state.resourceId),
                "reason": .string(reason),
            ])
    }

    /// The daemon's delivery service: a round every `interval`, run only by the daemon that leads
    /// `hook-delivery` when several share a database.
    public func service(interval: Duration, leadership: any Leadership, logger: Logger) -> PeriodicService {
        PeriodicService.led(by: leadership, name: "hook-delivery", interval: interval, logger: logger) {
            [self] in
            try await self.round()
        }
    }
}

/// At most `limit` requests in flight to one host; more wait their turn.
final class DestinationLimiter: Sendable {
    private struct Slot {
        var inUse = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let limit: Int
    private let slots = Locked([String: Slot]())

    init(limit: Int) {
        self.limit = limit
    }

    func acquire(_ host: String) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = slots.withLock { slots -> Bool in
                var slot = slots[host] ?? Slot()
                defer { slots[host] = slot }
                if slot.inUse < limit {
                    slot.inUse += 1
                    return true
                }
                slot.waiting.append(continuation)
                return false
            }
            if granted { continuation.resume() }
        }
    }

    func release(_ host: String) {
        let next = slots.withLock { slots -> CheckedContinuation<Void, Never>? in
            guard var slot = slots[host] else { return nil }
            if slot.waiting.isEmpty {
                slot.inUse -= 1
                slots[host] = slot.inUse == 0 ? nil : slot
                return nil
            }
            let next = slot.waiting.removeFirst()  // its turn: the slot passes on, inUse unchanged
            slots[host] = slot
            return next
        }
        next?.resume()
    }

    /// Requests in flight to `host` now.
    func inUse(_ host: String) -> Int { slots.withLock { $0[host]?.inUse ?? 0 } }
}

/// Counters for `/metrics`: deliveries, failures, give-ups, delivery lag and the outbox backlog. No label holds
/// a URL, a client's data or a secret.
public final class HookMetrics: Sendable {
    private struct Counts: Sendable {
        var delivered = 0
        var failed = 0
        var gaveUp = 0
        var lagSum: Int64 = 0
        var pending = 0
        var oldestAge: Int64 = 0
    }

    private let counts = Locked(Counts())

    public init() {}

    func recordDelivery(lagSeconds: Int64) {
        counts.withLock {
            $0.delivered += 1
            $0.lagSum += lagSeconds
        }
    }

    func recordFailure() { counts.withLock { $0.failed += 1 } }
    func recordGiveUp() { counts.withLock { $0.gaveUp += 1 } }

    func recordOutbox(pending: Int, oldestDate: Int64?, now: Int64) {
        counts.withLock {
            $0.pending = pending
            $0.oldestAge = oldestDate.map { max(0, now - $0) } ?? 0
        }
    }

    /// Deliveries answered 200 so far.
    public var delivered: Int { counts.withLock { $0.delivered } }
    /// Failed attempts so far.
    public var failed: Int { counts.withLock { $0.failed } }

    /// Prometheus text.
    public func prometheusText() -> String {
        let c = counts.withLock { $0 }
        return """
            # HELP cardvault_hook_deliveries_total Hook deliveries answered 200.
            # TYPE cardvault_hook_deliveries_total counter
            cardvault_hook_deliveries_total \(c.delivered)
            # HELP cardvault_hook_delivery_failures_total Hook delivery attempts that failed (retried later).
            # TYPE cardvault_hook_delivery_failures_total counter
            cardvault_hook_delivery_failures_total \(c.failed)
            # HELP cardvault_hook_deliveries_given_up_total Events whose delivery was given up (kept for the operator).
            # TYPE cardvault_hook_deliveries_given_up_total counter
            cardvault_hook_deliveries_given_up_total \(c.gaveUp)
            # HELP cardvault_hook_delivery_lag_seconds Seconds from an event to its delivery.
            # TYPE cardvault_hook_delivery_lag_seconds summary
            cardvault_hook_delivery_lag_seconds_sum \(c.lagSum)
            cardvault_hook_delivery_lag_seconds_count \(c.delivered)
            # HELP cardvault_hook_outbox_events Events waiting in the outbox (at the last round, up to its batch).
            # TYPE cardvault_hook_outbox_events gauge
            cardvault_hook_outbox_events \(c.pending)
            # HELP cardvault_hook_outbox_oldest_seconds Age of the oldest event waiting in the outbox.
            # TYPE cardvault_hook_outbox_oldest_seconds gauge
            cardvault_hook_outbox_oldest_seconds \(c.oldestAge)

            """
    }
}
