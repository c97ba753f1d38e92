import Foundation
import Risk
import VaultCore
import VaultCrypto
import VaultStore

/// The history the risk engine scores against, kept as small index records in the store:
/// one per transaction attempt and dimension (card fingerprint, user, IP, device), one per failure, and
/// one per success (with its amount). Ids end with a zero-padded timestamp, so "within the window" is a
/// prefix scan starting at the window's first second.
struct PayInRiskHistory: Sendable {
    let environment: PaymentsEnvironment
    let policy: RiskPolicy
    let counters: RiskCounters

    static let attempts = Collections.riskAttempts
    static let failures = Collections.riskFailures
    static let successes = Collections.riskSuccesses
    /// Most entries counted per dimension; more than this all look alike to the rules.
    static let countLimit = RiskCounters.defaultLimit

    /// The dimensions of one transaction.
    struct Keys: Sendable {
        var fingerprint: String
        var userId: String
        /// The keyed hash of the shopper's IP address (``ipKey(_:clientId:environment:)``), never the address.
        var ipAddress: String?
        var deviceId: String?
    }

    /// The IP dimension's value for `ipAddress`: a keyed hash, so that the history's record ids hold no address
    /// in clear (personal data).
    static func ipKey(_ ipAddress: String?, clientId: String, environment: PaymentsEnvironment) throws -> String? {
        guard let ipAddress, !ipAddress.isEmpty else { return nil }
        return try environment.recordIds.hashed(ipAddress, scope: clientId + ":ip")
    }

    /// For history records written before IP addresses were keyed: the record id with its address hashed, or nil
    /// when the id holds no clear address.
    static func rekeyedId(_ id: String, recordIds: KeyedRecordIds) -> String? {
        let parts = id.split(separator: ":", omittingEmptySubsequences: false)
        // clientId : ip : <address, which may itself hold colons (IPv6)> : <12-digit stamp> : transactionId
        guard parts.count >= 5, parts[1] == "ip" else { return nil }
        let address = parts[2..<(parts.count - 2)].joined(separator: ":")
        guard !KeyedRecordIds.isHashed(Substring(address)) else { return nil }
        let clientId = String(parts[0])
        let hashed = recordIds.hashed(address, scope: clientId + ":ip")
        return [clientId, "ip", hashed, String(parts[parts.count - 2]), String(parts[parts.count - 1])].joined(
            separator: ":")
    }

    /// A stable id of the shopper's device: the profiler's `deviceId` when posted, otherwise a keyed hash of
    /// the browser traits seen at tokenization. Nil when nothing is known.
    static func deviceId(
        of attempt: ProfilingAttempt?, clientId: String, keys: any FingerprintKeySource
    ) throws
        -> String?
    {
        guard let attempt else { return nil }
        let key = try keys.fingerprintKey(forClient: clientId)
        if let posted = attempt.device["deviceId"], !posted.isEmpty {
            return "d-" + Identifier.hex(HMACSHA256.authenticationCode(for: Array(posted.utf8), using: key).prefix(12))
        }
        let traits = [
            attempt.userAgent ?? "", attempt.acceptLanguage ?? "", attempt.device["screenWidth"] ?? "",
            attempt.device["screenHeight"] ?? "", attempt.device["colorDepth"] ?? "",
            attempt.device["timeZoneOffset"] ?? "", attempt.device["platform"] ?? "",
        ]
        guard traits.contains(where: { !$0.isEmpty }) else { return nil }
        let digest = HMACSHA256.authenticationCode(for: Array(traits.joined(separator: "\u{1F}").utf8), using: key)
        return "t-" + Identifier.hex(digest.prefix(12))
    }

    private static func stamp(_ seconds: Int64) -> String {
        let text = String(max(0, seconds))
        return String(repeating: "0", count: max(0, 12 - text.count)) + text
    }

    private static func dimensions(_ keys: Keys) -> [(String, String)] {
        var result = [("card", keys.fingerprint), ("user", keys.userId)]
        if let ip = keys.ipAddress, !ip.isEmpty { result.append(("ip", ip)) }
        if let device = keys.deviceId { result.append(("device", device)) }
        return result
    }

    private static func prefix(_ clientId: String, _ dimension: String, _ value: String) -> String {
        clientId + ":" + dimension + ":" + value + ":"
    }

    /// The signals for a new transaction of `amount` with these keys, at `now`, from the counters (each seeded
    /// from the history records the first time it is needed; see ``RiskCounters``).
    func signals(clientId: String, keys: Keys, amount: Int64, currency: String, now: Int64) async throws -> RiskSignals
    {
        var signals = RiskSignals(amount: amount)
        let since = now - Int64(policy.windowSeconds)
        // The counters' refreshes turn within the second (each key at its own phase), so they read the clock finer.
        let nowMillis = environment.clock.now.millisecondsSince1970
        let store = environment.store
        /// The counter of one dimension of one collection within the window.
        func windowed(_ collection: String, _ dimension: String, _ value: String) -> RiskCounters.Seeding {
            let prefix = Self.prefix(clientId, dimension, value)
            return RiskCounters.Seeding(
                key: Self.counterKey(collection, prefix), since: since, collection: collection, prefix: prefix)
        }
        let byCard = windowed(Self.attempts, "card", keys.fingerprint)
        let byUser = windowed(Self.attempts, "user", keys.userId)
        let byIP = keys.ipAddress.flatMap { $0.isEmpty ? nil : windowed(Self.attempts, "ip", $0) }
        let byDevice = keys.deviceId.map { windowed(Self.attempts, "device", $0) }
        let failedByCard = windowed(Self.failures, "card", keys.fingerprint)
        let failedByUser = windowed(Self.failures, "user", keys.userId)
        // The user's successes in this currency, whatever their age.
        let successPrefix = Self.prefix(clientId, "user", keys.userId) + currency + ":"
        let succeeded = RiskCounters.Seeding(
            key: Self.counterKey(Self.successes, successPrefix), since: nil, collection: Self.successes,
            prefix: successPrefix)
        try await counters.seed(
            [byCard, byUser, failedByCard, failedByUser, succeeded] + [byIP, byDevice].compactMap { $0 },
            nowMillis: nowMillis
        ) { try await Self.scan(store, $0, from: $1) }
        func summary<Summary: Sendable>(
            _ counter: RiskCounters.Seeding, _ summarize: ([RiskCounters.Event]) -> Summary
        ) async throws -> Summary {
            try await counters.summary(
                counter.key, since: counter.since, nowMillis: nowMillis,
                seed: { try await Self.scan(store, counter, from: $0) }, summarize)
        }
        signals.recentByCard = try await summary(byCard) { $0.count }
        signals.recentByUser = try await summary(byUser) { $0.count }
        if let byIP {
            signals.recentByIP = try await summary(byIP) { $0.count }
        }
        if let byDevice {
            let fingerprint = keys.fingerprint
            let (count, cards) = try await summary(byDevice) { entries in
                var cards = Set(entries.map { $0.detail })
                cards.insert(fingerprint)
                return (entries.count, cards.count)
            }
            signals.recentByDevice = count
            signals.distinctCardsOnDevice = cards
        } else {
            signals.distinctCardsOnDevice = 1
        }
        // A failure is indexed under its card and its user: count each failed transaction once.
        let cardFailures = try await summary(failedByCard) { $0.map { $0.transactionId } }
        let userFailures = try await summary(failedByUser) { $0.map { $0.transactionId } }
        signals.recentFailures =
            userFailures.isEmpty ? cardFailures.count : Set(cardFailures + userFailures).count
        // Counted, not listed: the rules need how many there are and the largest amount.
        let (count, largest) = try await summary(succeeded, Self.amounts)
        signals.userHistoryCount = count
        signals.userHistoryLargest = largest
        return signals
    }

    /// The events of `counter`'s history stamped from `from` on (or all of its window when nil).
    private static func scan(
        _ store: any RecordStore, _ counter: RiskCounters.Seeding, from: Int64?
    ) async throws
        -> [RiskCounters.Event]
    {
        let first = counter.first(from: from)
        let records = try await store.scan(
            counter.collection, prefix: counter.prefix, after: first.map { counter.prefix + stamp($0) },
            limit: countLimit)
        return records.compactMap { event(from: $0, prefix: counter.prefix) }
    }

    /// How many of `events` carry an amount, and the largest of them (0 when none).
    private static func amounts(_ events: [RiskCounters.Event]) -> (count: Int, largest: Int64) {
        var count = 0
        var largest: Int64 = 0
        for event in events {
            guard let amount = event.amount else { continue }
            count += 1
            largest = max(largest, amount)
        }
        return (count, largest)
    }

    /// The counter of one collection's entries under one prefix.
    private static func counterKey(_ collection: String, _ prefix: String) -> String { collection + "|" + prefix }

    /// The event a history record stands for: its id is `prefix` + 12-digit stamp + ":" + transaction id, its value
    /// the detail (a fingerprint, an amount, or nothing).
    static func event(from record: Record, prefix: String) -> RiskCounters.Event? {
        let rest = record.id.utf8.dropFirst(prefix.utf8.count)
        guard rest.count > 13, let colon = rest.firstIndex(of: 0x3A),
            let stamp = Int64(String(decoding: rest[..<colon], as: UTF8.self))
        else { return nil }
        return RiskCounters.Event(
            stamp: stamp, transactionId: String(decoding: rest[rest.index(after: colon)...], as: UTF8.self),
            detail: String(decoding: record.value, as: UTF8.self))
    }

    /// The counter events of the history writes `writes` (for ``RiskCounters/record(_:)`` once they are durable).
    static func counterEvents(_ writes: [RecordWrite]) -> [(key: String, event: RiskCounters.Event)] {
        var events: [(key: String, event: RiskCounters.Event)] = []
        for write in writes {
            guard case .put(let collection, let id, let value, _) = write,
                collection == attempts || collection == failures || collection == successes
            else { continue }
            // The prefix ends before the 12-digit stamp: the last ':' before it.
            let utf8 = Array(id.utf8)
            guard let lastColon = utf8.lastIndex(of: 0x3A), lastColon >= 13, utf8[lastColon - 13] == 0x3A else {
                continue
            }
            let prefix = String(decoding: utf8[...(lastColon - 13)], as: UTF8.self)
            let record = Record(collection: collection, id: id, version: 1, value: value)
            if let event = event(from: record, prefix: prefix) {
                events.append((counterKey(collection, prefix), event))
            }
        }
        return events
    }

    /// The index writes recording an attempt (made when the transaction is created; `.absent`: named after it).
    static func attemptWrites(clientId: String, keys: Keys, transactionId: String, now: Int64) -> [RecordWrite] {
        dimensions(keys).map { dimension, value in
            .put(
                collection: attempts, id: prefix(clientId, dimension, value) + stamp(now) + ":" + transactionId,
                value: Array(keys.fingerprint.utf8), condition: .absent)
        }
    }

    /// The index writes recording a final outcome.
    static func outcomeWrites(
        clientId: String, keys: Keys, transactionId: String, succeeded: Bool, amount: Int64, currency: String,
        now: Int64
    ) -> [RecordWrite] {
        if succeeded {
            return [
                .put(
                    collection: successes,
                    id: prefix(clientId, "user", keys.userId) + currency + ":" + stamp(now) + ":" + transactionId,
                    value: Array(String(amount).utf8), condition: .absent)
            ]
        }
        return [("card", keys.fingerprint), ("user", keys.userId)].map { dimension, value in
            .put(
                collection: failures, id: prefix(clientId, dimension, value) + stamp(now) + ":" + transactionId,
                value: [], condition: .absent)
        }
    }
}
