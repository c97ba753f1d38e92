import Foundation

/// The part of a client address a rate limit counts against: the exact address for IPv4 (an
/// IPv4-mapped IPv6 address counts as its IPv4 address), the /64 prefix for IPv6 (one end site gets
/// a whole /64, so rotating through it must not buy fresh buckets). Text that is no address at all
/// (an empty remote address in tests) shares one key.
public struct RateLimitKey: Hashable, Sendable {
    let high: UInt64
    let low: UInt64

    /// Keys for IPv6 prefixes carry this in `low` (an IPv4 key's `low` is `0xFFFF_xxxx_xxxx`).
    private static let prefixMarker: UInt64 = 1 << 63
    static let unknown = RateLimitKey(high: .max, low: .max)

    public init(address: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, address, &v4) == 1 {
            self.init(high: 0, low: 0xFFFF_0000_0000 | UInt64(UInt32(bigEndian: v4.s_addr)))
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, address, &v6) == 1 else {
            self = Self.unknown
            return
        }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        let high = bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let low = bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        if high == 0 && low >> 32 == 0xFFFF {
            self.init(high: 0, low: low)  // ::ffff:a.b.c.d is the IPv4 client a.b.c.d
        } else {
            self.init(high: high, low: Self.prefixMarker)
        }
    }

    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }
}

/// What a limiter decided for one request.
public enum RateDecision: Equatable, Sendable {
    case allowed
    /// Refused; the client may try again after this many seconds (at least 1): the `Retry-After`.
    case limited(retryAfter: Int)
}

/// A bucket's standing for the `X-RateLimit-*` headers.
public struct RateStanding: Equatable, Sendable {
    /// Requests in a full bucket (the limit per minute).
    public var limit: Int
    /// Whole requests the bucket holds now.
    public var remaining: Int
    /// Unix seconds when the bucket is full again.
    public var resetsAt: Int64
}

/// A token bucket per client address (see ``RateLimitKey``: IPv4 exact, IPv6 per /64), `perMinute`
/// requests in a burst refilled continuously at `perMinute` per minute, in bounded memory.
///
/// The buckets sit in a fixed-capacity LRU table: at most `capacity` keys are tracked (slot arrays
/// and an index that never grow past it), and a request costs O(1): one hash lookup and a move to
/// the front of an intrusive list, under one lock. When the table is full, the least recently seen
/// key is dropped to make room.
///
/// Why an LRU and not a count-min sketch: a sketch shares counters between keys, so its errors are
/// false positives: an innocent client whose cells collide with a busy one's is refused, and a
/// flood of distinct addresses can raise every cell until everyone is. The LRU never limits a
/// client for someone else's requests. Its error is a false negative: a client whose bucket was
/// evicted (it took `capacity` other keys arriving since its last request) starts again with a
/// full burst. So an attacker with more than `capacity` addresses or /64 prefixes, cycling through
/// them all, gets at most one burst per key per cycle: the limit then bounds each key's rate no
/// worse than `perMinute` per cycle, and the table's memory stays fixed. The entry evicted is the
/// least recently used, which is most likely one whose bucket has refilled (nothing is lost).
public final class AddressRateLimiter: Sendable {
    private struct Table {
        var index: [RateLimitKey: Int32] = [:]
        var keys: [RateLimitKey] = []
        var tokens: [Double] = []
        var updated: [Double] = []
        var previous: [Int32] = []
        var next: [Int32] = []
        var head: Int32 = -1  // most recently used
        var tail: Int32 = -1  // least recently used
    }

    public let perMinute: Int
    /// Most keys tracked at once.
    public let capacity: Int
    private let rate: Double
    private let clock: any WallClock
    private let table = Locked(Table())

    /// Keys tracked by default: 65,536, about 4 MiB at most (under 64 bytes a key with the index).
    public static let defaultCapacity = 65_536

    public init(perMinute: Int, capacity: Int = AddressRateLimiter.defaultCapacity, clock: any WallClock) {
        self.perMinute = max(1, perMinute)
        self.capacity = min(max(1, capacity), Int(Int32.max))
        self.rate = Double(self.perMinute) / 60
        self.clock = clock
    }

    /// Takes one request for `address`: `.allowed`, or `.limited` when its bucket is empty (answer 429).
    public func take(_ address: String) -> RateDecision {
        decide(RateLimitKey(address: address), spend: true)
    }

    /// Whether `address` would be allowed now, without spending (for limits that count only failures:
    /// check first, ``take(_:)`` when the request failed).
    public func check(_ address: String) -> RateDecision {
        decide(RateLimitKey(address: address), spend: false)
    }

    /// Takes one request; false when limited.
    public func allow(_ address: String) -> Bool { take(address) == .allowed }

    /// Seconds until `address` may try again (0 when it may now).
    public func retryAfter(_ address: String) -> Int {
        if case .limited(let seconds) = check(address) { return seconds }
        return 0
    }

    /// What is left of `address`'s bucket now, without spending: whole requests remaining and the Unix time
    /// (seconds, rounded up) at which the bucket is full again.
    public func standing(_ address: String) -> RateStanding {
        let key = RateLimitKey(address: address)
        let now = clock.now.timeIntervalSince1970
        let burst = Double(perMinute)
        let tokens = table.withLock { table -> Double in
            guard let slot = table.index[key] else { return burst }
            let at = Int(slot)
            return min(burst, table.tokens[at] + max(0, now - table.updated[at]) * rate)
        }
        return RateStanding(
            limit: perMinute, remaining: Int(tokens.rounded(.down)),
            resetsAt: Int64((now + (burst - tokens) / rate).rounded(.up)))
    }

    /// Keys tracked now (at most ``capacity``).
    public var trackedKeys: Int { table.withLock { $0.index.count } }

    private func decide(_ key: RateLimitKey, spend: Bool) -> RateDecision {
        let now = clock.now.timeIntervalSince1970
        let burst = Double(perMinute)
        let rate = self.rate
        let capacity = self.capacity
        return table.withLock { table -> RateDecision in
            let slot: Int32
            if let found = table.index[key] {
                slot = found
                let at = Int(slot)
                let elapsed = max(0, now - table.updated[at])
                table.tokens[at] = min(burst, table.tokens[at] + elapsed * rate)
                table.updated[at] = now
                Self.unlink(slot, &table)
            } else {
                if !spend { return .allowed }  // an unseen key has a full bucket; nothing to record
                if table.keys.count < capacity {
                    slot = Int32(table.keys.count)
                    table.keys.append(key)
                    table.tokens.append(burst)
                    table.updated.append(now)
                    table.previous.append(-1)
                    table.next.append(-1)
                } else {
                    slot = table.tail
                    Self.unlink(slot, &table)
                    table.index[table.keys[Int(slot)]] = nil
                    table.keys[Int(slot)] = key
                    table.tokens[Int(slot)] = burst
                    table.updated[Int(slot)] = now
                }
                table.index[key] = slot
            }
            Self.pushFront(slot, &table)
            let at = Int(slot)
            guard table.tokens[at] >= 1 else {
                return .limited(retryAfter: max(1, Int(((1 - table.tokens[at]) / rate).rounded(.up))))
            }
            if spend { table.tokens[at] -= 1 }
            return .allowed
        }
    }

    private static func unlink(_ slot: Int32, _ table: inout Table) {
        let at = Int(slot)
        let before = table.previous[at]
        let after = table.next[at]
        if before >= 0 { table.next[Int(before)] = after } else if table.head == slot { table.head = after }
        if after >= 0 { table.previous[Int(after)] = before } else if table.tail == slot { table.tail = before }
        table.previous[at] = -1
        table.next[at] = -1
    }

    private static func pushFront(_ slot: Int32, _ table: inout Table) {
        let at = Int(slot)
        table.previous[at] = -1
        table.next[at] = table.head
        if table.head >= 0 { table.previous[Int(table.head)] = slot }
        table.head = slot
        if table.tail < 0 { table.tail = slot }
    }
}
