import Foundation
import VaultCrypto
import VaultStore

/// The history the risk engine scores against, kept as small index records in the store:
/// one per transaction attempt and dimension (card fingerprint, user, IP, device), one per failure, and
/// one per success (with its amount). Ids end with a zero-padded timestamp, so "within the window" is a
/// prefix scan starting at the window's first second.
struct PayInRiskHistory: Sendable {
    let environment: PaymentsEnvironment
    let policy: RiskPolicy

    static let attempts = Collections.riskAttempts
    static let failures = Collections.riskFailures
    static let successes = Collections.riskSuccesses
    /// Most entries counted per dimension; more than this all look alike to the rules.
    static let countLimit = 1000

    /// The dimensions of one transaction.
    struct Keys: Sendable {
        var fingerprint: String
        var userId: String
        var ipAddress: String?
        var deviceId: String?
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

    /// The signals for a new transaction of `amount` with these keys, at `now`.
    func signals(clientId: String, keys: Keys, amount: Int64, currency: String, now: Int64) async throws -> RiskSignals
    {
        var signals = RiskSignals(amount: amount)
        let since = now - Int64(policy.windowSeconds)
        func recent(_ collection: String, _ dimension: String, _ value: String) async throws -> [Record] {
            let prefix = Self.prefix(clientId, dimension, value)
            return try await environment.store.scan(
                collection, prefix: prefix, after: prefix + Self.stamp(since), limit: Self.countLimit)
        }
        // Plain counts come from the store's index: no value is read.
        func count(_ dimension: String, _ value: String) async throws -> Int {
            let prefix = Self.prefix(clientId, dimension, value)
            return try await environment.store.count(
                Self.attempts, prefix: prefix, after: prefix + Self.stamp(since), limit: Self.countLimit)
        }
        signals.recentByCard = try await count("card", keys.fingerprint)
        signals.recentByUser = try await count("user", keys.userId)
        if let ip = keys.ipAddress, !ip.isEmpty { signals.recentByIP = try await count("ip", ip) }
        if let device = keys.deviceId {
            let entries = try await recent(Self.attempts, "device", device)
            signals.recentByDevice = entries.count
            var cards = Set(entries.map { String(decoding: $0.value, as: UTF8.self) })
            cards.insert(keys.fingerprint)
            signals.distinctCardsOnDevice = cards.count
        } else {
            signals.distinctCardsOnDevice = 1
        }
        // A failure is indexed under its card and its user: count each failed transaction once.
        let failed =
            try await recent(Self.failures, "card", keys.fingerprint) + recent(Self.failures, "user", keys.userId)
        signals.recentFailures = Set(failed.map { $0.id.split(separator: ":").last.map(String.init) ?? $0.id }).count
        signals.userHistory = try await environment.store.scan(
            Self.successes, prefix: Self.prefix(clientId, "user", keys.userId) + currency + ":", after: nil,
            limit: Self.countLimit
        ).compactMap { Int64(String(decoding: $0.value, as: UTF8.self)) }
        return signals
    }

    /// The index writes recording an attempt (made when the transaction is created).
    static func attemptWrites(clientId: String, keys: Keys, transactionId: String, now: Int64) -> [RecordWrite] {
        dimensions(keys).map { dimension, value in
            .put(
                collection: attempts, id: prefix(clientId, dimension, value) + stamp(now) + ":" + transactionId,
                value: Array(keys.fingerprint.utf8), condition: .unconditional)
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
                    value: Array(String(amount).utf8), condition: .unconditional)
            ]
        }
        return [("card", keys.fingerprint), ("user", keys.userId)].map { dimension, value in
            .put(
                collection: failures, id: prefix(clientId, dimension, value) + stamp(now) + ":" + transactionId,
                value: [], condition: .unconditional)
        }
    }
}
