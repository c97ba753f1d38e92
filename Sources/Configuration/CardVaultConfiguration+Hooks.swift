import Foundation

extension CardVaultConfiguration {
    /// Hook deliveries (`hooks.*`): how failed deliveries are retried and where hooks may lead (docs/hooks.md).
    public struct Hooks: Sendable, Equatable {
        /// Seconds between retries in the first hour after a failed delivery (then every 8 hours for 3 days).
        public var retryIntervalSeconds: Int
        /// Loopback, private, link-local and metadata destinations (and plain http to them) are allowed: for a
        /// development receiver only.
        public var allowPrivateAddresses: Bool
        /// Deliveries in flight at once to one host.
        public var maxConcurrentPerDestination: Int
        /// Milliseconds between two passes over the outbox.
        public var pollIntervalMilliseconds: Int

        public init(
            retryIntervalSeconds: Int = 600, allowPrivateAddresses: Bool = false, maxConcurrentPerDestination: Int = 4,
            pollIntervalMilliseconds: Int = 250
        ) {
            self.retryIntervalSeconds = retryIntervalSeconds
            self.allowPrivateAddresses = allowPrivateAddresses
            self.maxConcurrentPerDestination = maxConcurrentPerDestination
            self.pollIntervalMilliseconds = pollIntervalMilliseconds
        }
    }
}

extension ConfigurationField {
    /// The `hooks.*` fields.
    static let hookFields: [ConfigurationField] = [
        ConfigurationField(
            path: "hooks.retryIntervalSeconds", environmentName: "CARDVAULT_HOOKS_RETRY_INTERVAL_SECONDS",
            kind: .integer(1...3_600)
        ) { if case .integer(let value) = $1 { $0.hooks.retryIntervalSeconds = value } },
        ConfigurationField(
            path: "hooks.allowPrivateAddresses", environmentName: "CARDVAULT_HOOKS_ALLOW_PRIVATE_ADDRESSES",
            kind: .boolean
        ) { if case .integer(let value) = $1 { $0.hooks.allowPrivateAddresses = value == 1 } },
        ConfigurationField(
            path: "hooks.maxConcurrentPerDestination",
            environmentName: "CARDVAULT_HOOKS_MAX_CONCURRENT_PER_DESTINATION",
            kind: .integer(1...256)
        ) { if case .integer(let value) = $1 { $0.hooks.maxConcurrentPerDestination = value } },
        ConfigurationField(
            path: "hooks.pollIntervalMilliseconds", environmentName: "CARDVAULT_HOOKS_POLL_INTERVAL_MILLISECONDS",
            kind: .integer(10...60_000)
        ) { if case .integer(let value) = $1 { $0.hooks.pollIntervalMilliseconds = value } },
    ]
}
