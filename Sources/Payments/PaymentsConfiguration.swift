public import CardKit
public import Foundation
public import VaultCore

/// Settings of the merchant API's domain: lifetimes, limits and the public base URL used in links handed to
/// browsers. A value type with defaults; the daemon builds it once from its configuration.
public struct PaymentsConfiguration: Sendable {
    /// Base URL browsers reach the daemon at (`http://127.0.0.1:8080`), without a trailing slash.
    public var publicBaseURL: String
    /// How long a card registration's access key may be used for tokenization (20 minutes).
    public var accessKeyLifetime: TimeInterval
    /// Lifetime of an OAuth bearer token (`expires_in`).
    public var bearerTokenLifetime: TimeInterval
    /// How long a security code stays in memory for the first payment or validation (at most 1 hour).
    public var securityCodeRetention: TimeInterval
    /// Failed tokenization attempts on one registration before it locks.
    public var maximumTokenizationFailures: Int
    /// Tokenization attempts one IP address may make per minute (burst), refilled continuously.
    public var tokenizationsPerMinutePerAddress: Int
    /// Hosted checkout page requests (`/srci...`) one address may make per minute (burst), refilled continuously.
    public var pageViewsPerMinutePerAddress: Int
    /// Sandbox ACS page requests (`/acs/...`) one address may make per minute (burst).
    public var acsRequestsPerMinutePerAddress: Int
    /// Failed `POST /v2.01/oauth/token` authentications one address may make per minute (burst).
    public var tokenFailuresPerMinutePerAddress: Int
    /// Addresses (IPv4) or /64 prefixes (IPv6) each rate limiter tracks at once (see ``AddressRateLimiter``).
    public var rateLimitTrackedAddresses: Int
    /// How long idempotent responses are kept (24 hours).
    public var idempotencyRetention: TimeInterval
    /// How long a key may stay reserved by a request that has not answered (60 seconds). Past it the
    /// reservation counts as never made, so a client whose first attempt died with the process (a
    /// crash mid-request) can retry instead of getting 409 until ``idempotencyRetention`` ends.
    public var idempotencyInProgressTimeout: TimeInterval
    /// How long a card registration that never became `VALIDATED` is kept (24 hours). Its vaulted card number,
    /// if the browser tokenized one, goes earlier: at the access key's expiry (``accessKeyLifetime``), after which
    /// the registration can no longer be completed.
    public var registrationLifetime: TimeInterval
    /// BIN prefixes → issuer country, for the Card object's `Country`.
    public var countryTable: CountryTable
    /// How long a profiling attempt (the device signals of a tokenization) is kept for the risk scoring of the
    /// pay-ins that name it (7 days).
    public var profilingAttemptRetention: TimeInterval
    /// How long the amount of a succeeded transaction is kept as the user's history for the risk rules (1 year).
    public var riskHistoryRetention: TimeInterval
    /// How long an event (`GET /events`) is kept after the change it reports (400 days).
    public var eventRetention: TimeInterval = 400 * 86_400
    /// Most bearer tokens the memory cache in front of the store holds.
    public var bearerTokenCacheCapacity: Int
    /// With several daemons on one store (PostgreSQL): seconds after which a risk counter is read again from the
    /// history, so that pay-ins made through the other daemons count toward the velocity rules. Nil for a store
    /// one daemon owns (its commits keep the counters exact).
    public var riskCountersRefreshSeconds: Int64? = nil

    public init(
        publicBaseURL: String = "http://127.0.0.1:8080",
        accessKeyLifetime: TimeInterval = 20 * 60,
        bearerTokenLifetime: TimeInterval = 3600,
        securityCodeRetention: TimeInterval = 3600,
        maximumTokenizationFailures: Int = 5,
        tokenizationsPerMinutePerAddress: Int = 60,
        pageViewsPerMinutePerAddress: Int = 300,
        acsRequestsPerMinutePerAddress: Int = 120,
        tokenFailuresPerMinutePerAddress: Int = 30,
        rateLimitTrackedAddresses: Int = AddressRateLimiter.defaultCapacity,
        idempotencyRetention: TimeInterval = 24 * 3600,
        idempotencyInProgressTimeout: TimeInterval = 60,
        registrationLifetime: TimeInterval = 24 * 3600,
        countryTable: CountryTable = .sandbox,
        profilingAttemptRetention: TimeInterval = 7 * 86_400,
        riskHistoryRetention: TimeInterval = 365 * 86_400,
        bearerTokenCacheCapacity: Int = 10_000
    ) {
        var base = publicBaseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.publicBaseURL = base
        self.accessKeyLifetime = accessKeyLifetime
        self.bearerTokenLifetime = bearerTokenLifetime
        self.securityCodeRetention = min(securityCodeRetention, 3600)
        self.maximumTokenizationFailures = maximumTokenizationFailures
        self.tokenizationsPerMinutePerAddress = tokenizationsPerMinutePerAddress
        self.pageViewsPerMinutePerAddress = pageViewsPerMinutePerAddress
        self.acsRequestsPerMinutePerAddress = acsRequestsPerMinutePerAddress
        self.tokenFailuresPerMinutePerAddress = tokenFailuresPerMinutePerAddress
        self.rateLimitTrackedAddresses = rateLimitTrackedAddresses
        self.idempotencyRetention = idempotencyRetention
        self.idempotencyInProgressTimeout = idempotencyInProgressTimeout
        self.registrationLifetime = registrationLifetime
        self.countryTable = countryTable
        self.profilingAttemptRetention = profilingAttemptRetention
        self.riskHistoryRetention = riskHistoryRetention
        self.bearerTokenCacheCapacity = bearerTokenCacheCapacity
    }
}
