import Foundation
import Testing

@testable import VaultCore

@Suite struct AddressRateLimiterTests {
    @Test func aBurstIsAllowedThenRefusedWithRetryAfterUntilItRefills() {
        let clock = ManualClock()
        let limiter = AddressRateLimiter(perMinute: 6, clock: clock)  // one token every 10 s
        for _ in 0..<6 { #expect(limiter.take("198.51.100.7") == .allowed) }
        #expect(limiter.take("198.51.100.7") == .limited(retryAfter: 10))
        clock.advance(by: 4)
        #expect(limiter.take("198.51.100.7") == .limited(retryAfter: 6))
        clock.advance(by: 6)
        #expect(limiter.take("198.51.100.7") == .allowed)
        #expect(limiter.take("198.51.100.7") == .limited(retryAfter: 10))
        // The bucket never holds more than the burst, however long the address was away.
        clock.advance(by: 3600)
        for _ in 0..<6 { #expect(limiter.take("198.51.100.7") == .allowed) }
        #expect(limiter.take("198.51.100.7") != .allowed)
    }

    @Test func checkDoesNotSpend() {
        let limiter = AddressRateLimiter(perMinute: 2, clock: ManualClock())
        for _ in 0..<10 { #expect(limiter.check("203.0.113.9") == .allowed) }
        #expect(limiter.trackedKeys == 0)
        #expect(limiter.take("203.0.113.9") == .allowed)
        #expect(limiter.take("203.0.113.9") == .allowed)
        #expect(limiter.check("203.0.113.9") == .limited(retryAfter: 30))
        #expect(limiter.retryAfter("203.0.113.9") == 30)
        #expect(limiter.retryAfter("203.0.113.10") == 0)
    }

    @Test func ipv4AddressesAreLimitedOneByOne() {
        let limiter = AddressRateLimiter(perMinute: 1, clock: ManualClock())
        #expect(limiter.take("192.0.2.1") == .allowed)
        #expect(limiter.take("192.0.2.1") != .allowed)
        #expect(limiter.take("192.0.2.2") == .allowed)
        // An IPv4-mapped IPv6 address is its IPv4 client.
        #expect(limiter.take("::ffff:192.0.2.2") != .allowed)
        #expect(limiter.take("::ffff:192.0.2.3") == .allowed)
    }

    @Test func rotatingThroughAnIPv6Slash64IsLimitedAsOneClient() {
        let limiter = AddressRateLimiter(perMinute: 5, clock: ManualClock())
        var allowed = 0
        for host in 1...100 {
            if limiter.take("2001:db8:1:2::" + String(host, radix: 16)) == .allowed { allowed += 1 }
        }
        #expect(allowed == 5)
        #expect(limiter.take("2001:db8:1:2:ffff:ffff:ffff:ffff") != .allowed)
        #expect(limiter.take("2001:0db8:0001:0002:abcd::1") != .allowed)  // other spelling, same /64
        // The neighbouring /64 is another client.
        #expect(limiter.take("2001:db8:1:3::1") == .allowed)
        #expect(limiter.trackedKeys == 2)
    }

    @Test func keysGroupIPv6By64AndIPv4Exactly() {
        #expect(RateLimitKey(address: "2001:db8::1") == RateLimitKey(address: "2001:db8::ffff:1"))
        #expect(RateLimitKey(address: "2001:db8::1") != RateLimitKey(address: "2001:db8:0:1::1"))
        #expect(RateLimitKey(address: "10.0.0.1") != RateLimitKey(address: "10.0.0.2"))
        #expect(RateLimitKey(address: "10.0.0.1") == RateLimitKey(address: "::ffff:10.0.0.1"))
        // ::/64 holds ::ffff:0:0/96 in name only: a real IPv6 client there does not share IPv4 keys.
        #expect(RateLimitKey(address: "::1") != RateLimitKey(address: "0.0.0.1"))
        #expect(RateLimitKey(address: "not an address") == RateLimitKey(address: ""))
    }

    @Test func memoryStaysBoundedAndTheLeastRecentlySeenIsEvicted() {
        let clock = ManualClock()
        let limiter = AddressRateLimiter(perMinute: 1, capacity: 1024, clock: clock)
        #expect(limiter.take("198.51.100.1") == .allowed)
        #expect(limiter.take("198.51.100.1") != .allowed)
        // 100,000 other addresses: the table never tracks more than its capacity.
        for index in 0..<100_000 {
            _ = limiter.take("10.\(index >> 16 & 255).\(index >> 8 & 255).\(index & 255)")
            if index % 10_000 == 0 { #expect(limiter.trackedKeys <= 1024) }
        }
        #expect(limiter.trackedKeys == 1024)
        // 198.51.100.1 was the least recently seen long ago: forgotten, so a fresh bucket (the false
        // negative the LRU accepts, never a false positive).
        #expect(limiter.take("198.51.100.1") == .allowed)
    }

    @Test func aRecentlySeenAddressSurvivesEviction() {
        let limiter = AddressRateLimiter(perMinute: 1, capacity: 4, clock: ManualClock())
        #expect(limiter.take("192.0.2.1") == .allowed)
        for other in 2...4 { _ = limiter.take("192.0.2.\(other)") }
        #expect(limiter.take("192.0.2.1") != .allowed)  // seen again: now the most recent
        _ = limiter.take("192.0.2.5")  // evicts 192.0.2.2, the least recently seen
        #expect(limiter.take("192.0.2.1") != .allowed)
        #expect(limiter.take("192.0.2.2") == .allowed)  // forgotten, fresh bucket
        #expect(limiter.trackedKeys == 4)
    }

    @Test func aRequestCostsConstantTimeWhateverTheNumberOfAddresses() {
        // The old limiter rescanned every address under its lock past 10,000 of them; this one's
        // cost per request must not grow with the table. Compare 20,000 requests into a small and a
        // full large table (generous bound: shared CI machines are noisy).
        func timed(capacity: Int) -> Double {
            let limiter = AddressRateLimiter(perMinute: 1, capacity: capacity, clock: ManualClock())
            for index in 0..<capacity { _ = limiter.take("10.1.\(index >> 8 & 255).\(index & 255)") }
            let start = DispatchTime.now().uptimeNanoseconds
            for index in 0..<20_000 { _ = limiter.take("172.16.\(index >> 8 & 255).\(index & 255)") }
            return Double(DispatchTime.now().uptimeNanoseconds - start)
        }
        let small = timed(capacity: 1024)
        let large = timed(capacity: 60_000)
        #expect(large < small * 5, "per request: \(small / 20_000) ns small table, \(large / 20_000) ns large")
    }
}
