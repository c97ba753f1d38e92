public import OutboundHTTP

/// The operator's forward settings (`forward.*` in the configuration file).
public struct ForwardConfiguration: Sendable, Equatable {
    /// Allowed destination URL prefixes. Empty: forwarding is off for everyone.
    public var destinations: [DestinationPrefix]
    /// Settings of the HTTPS client (CA file, timeouts, response cap, concurrency, address policy).
    public var client: OutboundHTTPConfiguration
    /// Largest request body after substitution.
    public var maxRequestBodyBytes: Int
    /// Most distinct cards one forward may name.
    public var maxCardsPerForward: Int

    public init(
        destinations: [DestinationPrefix] = [], client: OutboundHTTPConfiguration = OutboundHTTPConfiguration(),
        maxRequestBodyBytes: Int = 64 << 10, maxCardsPerForward: Int = 10
    ) {
        self.destinations = destinations
        self.client = client
        self.maxRequestBodyBytes = maxRequestBodyBytes
        self.maxCardsPerForward = maxCardsPerForward
    }
}
