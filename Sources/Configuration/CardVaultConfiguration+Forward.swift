import Foundation
import OutboundHTTP

extension CardVaultConfiguration {
    /// Detokenize-and-forward (`forward.*`): where card data may be sent and how (docs/forward.md).
    public struct Forward: Sendable, Equatable {
        /// Allowed destination URL prefixes (`https://psp.example/v1/`); empty turns forwarding off.
        public var destinations: [String]
        /// Extra CA certificates (PEM) trusted besides the system CAs.
        public var caFile: String?
        /// Special-purpose address ranges (private, loopback, link-local ...) destinations may resolve to
        /// (`10.1.0.0/16`, `127.0.0.1/32`); none by default.
        public var privateNetworks: [String]
        public var connectTimeoutSeconds: Int
        /// The whole exchange with the destination.
        public var timeoutSeconds: Int
        public var maxRequestBodyBytes: Int
        public var maxResponseBodyBytes: Int
        /// Forwards in flight at once; more get 503.
        public var maxConcurrent: Int

        public init(
            destinations: [String] = [], caFile: String? = nil, privateNetworks: [String] = [],
            connectTimeoutSeconds: Int = 5, timeoutSeconds: Int = 30, maxRequestBodyBytes: Int = 64 << 10,
            maxResponseBodyBytes: Int = 1 << 20, maxConcurrent: Int = 64
        ) {
            self.destinations = destinations
            self.caFile = caFile
            self.privateNetworks = privateNetworks
            self.connectTimeoutSeconds = connectTimeoutSeconds
            self.timeoutSeconds = timeoutSeconds
            self.maxRequestBodyBytes = maxRequestBodyBytes
            self.maxResponseBodyBytes = maxResponseBodyBytes
            self.maxConcurrent = maxConcurrent
        }
    }
}

extension ConfigurationField {
    /// The `forward.*` fields.
    static let forwardFields: [ConfigurationField] = [
        ConfigurationField(
            path: "forward.destinations", environmentName: "CARDVAULT_FORWARD_DESTINATIONS",
            kind: .list(example: "https://psp.example/v1/") { item in
                do throws(DestinationURL.Problem) {
                    _ = try DestinationPrefix(parsing: item)
                    return nil
                } catch {
                    return "\(item.prefix(80)) " + error.reason
                }
            }
        ) { if case .list(let items) = $1 { $0.forward.destinations = items } },
        ConfigurationField(path: "forward.caFile", environmentName: "CARDVAULT_FORWARD_CA_FILE", kind: .optionalPath) {
            config, value in
            if case .text(let text) = value { config.forward.caFile = text } else { config.forward.caFile = nil }
        },
        ConfigurationField(
            path: "forward.privateNetworks", environmentName: "CARDVAULT_FORWARD_PRIVATE_NETWORKS",
            kind: .list(example: "10.1.0.0/16") { item in
                IPNetwork(item) == nil
                    ? "\(item.prefix(60)) is not an address range such as 10.1.0.0/16 or ::1/128" : nil
            }
        ) { if case .list(let items) = $1 { $0.forward.privateNetworks = items } },
        ConfigurationField(
            path: "forward.connectTimeoutSeconds", environmentName: "CARDVAULT_FORWARD_CONNECT_TIMEOUT_SECONDS",
            kind: .integer(1...300)
        ) { if case .integer(let value) = $1 { $0.forward.connectTimeoutSeconds = value } },
        ConfigurationField(
            path: "forward.timeoutSeconds", environmentName: "CARDVAULT_FORWARD_TIMEOUT_SECONDS",
            kind: .integer(1...600)
        ) { if case .integer(let value) = $1 { $0.forward.timeoutSeconds = value } },
        ConfigurationField(
            path: "forward.maxRequestBodyBytes", environmentName: "CARDVAULT_FORWARD_MAX_REQUEST_BODY_BYTES",
            kind: .integer(1...(16 << 20))
        ) { if case .integer(let value) = $1 { $0.forward.maxRequestBodyBytes = value } },
        ConfigurationField(
            path: "forward.maxResponseBodyBytes", environmentName: "CARDVAULT_FORWARD_MAX_RESPONSE_BODY_BYTES",
            kind: .integer(1...(64 << 20))
        ) { if case .integer(let value) = $1 { $0.forward.maxResponseBodyBytes = value } },
        ConfigurationField(
            path: "forward.maxConcurrent", environmentName: "CARDVAULT_FORWARD_MAX_CONCURRENT", kind: .integer(1...4096)
        ) { if case .integer(let value) = $1 { $0.forward.maxConcurrent = value } },
    ]
}
