import Foundation
import VaultCore

/// Limits tokenization attempts per client IP address with a token bucket: `perMinute` attempts in a burst,
/// refilled continuously at `perMinute` per minute. Time comes from the injected clock.
public final class TokenizationRateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Date
    }

    private let perMinute: Double
    private let clock: any WallClock
    private let buckets = Locked<[String: Bucket]>([:])
    /// Addresses tracked before idle full buckets are dropped.
    private static let pruneThreshold = 10_000

    public init(perMinute: Int, clock: any WallClock) {
        self.perMinute = Double(max(1, perMinute))
        self.clock = clock
    }

    /// Takes one attempt for `address`; false when its bucket is empty (answer 429).
    public func allow(_ address: String) -> Bool {
        let now = clock.now
        return buckets.withLock { buckets in
            if buckets.count > Self.pruneThreshold { prune(&buckets, now: now) }
            var bucket = buckets[address] ?? Bucket(tokens: perMinute, updated: now)
            let elapsed = max(0, now.timeIntervalSince(bucket.updated))
            bucket.tokens = min(perMinute, bucket.tokens + elapsed * perMinute / 60)
            bucket.updated = now
            guard bucket.tokens >= 1 else {
                buckets[address] = bucket
                return false
            }
            bucket.tokens -= 1
            buckets[address] = bucket
            return true
        }
    }

    /// Seconds until `address` may try again (0 when it may now).
    public func retryAfter(_ address: String) -> Int {
        let now = clock.now
        return buckets.withLock { buckets in
            guard let bucket = buckets[address] else { return 0 }
            let tokens = bucket.tokens + max(0, now.timeIntervalSince(bucket.updated)) * perMinute / 60
            return tokens >= 1 ? 0 : Int(((1 - tokens) * 60 / perMinute).rounded(.up))
        }
    }

    private func prune(_ buckets: inout [String: Bucket], now: Date) {
        buckets = buckets.filter { _, bucket in
            bucket.tokens + now.timeIntervalSince(bucket.updated) * perMinute / 60 < perMinute
        }
    }
}
