public import VaultCore

/// The tokenization endpoint's limiter: an ``AddressRateLimiter`` (bounded LRU of token buckets,
/// IPv4 exact, IPv6 per /64).
public typealias TokenizationRateLimiter = AddressRateLimiter

/// The rate limits of every route that answers without a login, one limiter per class of route, each
/// keyed on the client address (``RateLimitKey``) and bounded in memory (``AddressRateLimiter``).
/// Built once per process from ``PaymentsConfiguration``; the routes only pick their class.
public struct AbuseLimits: Sendable {
    /// `POST /tokenize/...` and the hosted checkout's card submission: every attempt counts.
    public let tokenization: AddressRateLimiter
    /// The hosted checkout pages (`/srci...`): every request counts.
    public let hostedPages: AddressRateLimiter
    /// The sandbox ACS page (`/acs/...`): every request counts.
    public let acs: AddressRateLimiter
    /// `POST /v2.01/oauth/token`: only failed authentications count; a limited address is refused
    /// before its credentials are checked.
    public let tokenFailures: AddressRateLimiter

    public init(configuration: PaymentsConfiguration = PaymentsConfiguration(), clock: any WallClock) {
        let capacity = configuration.rateLimitTrackedAddresses
        tokenization = AddressRateLimiter(
            perMinute: configuration.tokenizationsPerMinutePerAddress, capacity: capacity, clock: clock)
        hostedPages = AddressRateLimiter(
            perMinute: configuration.pageViewsPerMinutePerAddress, capacity: capacity, clock: clock)
        acs = AddressRateLimiter(
            perMinute: configuration.acsRequestsPerMinutePerAddress, capacity: capacity, clock: clock)
        tokenFailures = AddressRateLimiter(
            perMinute: configuration.tokenFailuresPerMinutePerAddress, capacity: capacity, clock: clock)
    }
}
