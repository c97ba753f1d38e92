public import VaultCore

/// Why an outbound request was not sent or got no answer. Messages name the failure, never a header, a body or
/// anything libcurl printed about them. Equal by code.
public struct OutboundHTTPError: CodedError, Equatable {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The request itself is unusable (a header the client does not send, an unknown method).
        public static let invalidRequest = Code("invalidRequest")
        /// The destination's host name did not resolve.
        public static let unresolvable = Code("unresolvable")
        /// The destination resolves to, or libcurl tried to connect to, an address the policy refuses.
        public static let addressRefused = Code("addressRefused")
        /// No TCP connection could be made.
        public static let connectFailed = Code("connectFailed")
        /// The TLS handshake failed: the certificate did not verify against the trusted CAs, or no common protocol.
        public static let tlsFailed = Code("tlsFailed")
        /// No complete answer within the connect timeout or the total timeout.
        public static let timeout = Code("timeout")
        /// The answer's body was larger than the configured maximum.
        public static let responseTooLarge = Code("responseTooLarge")
        /// The destination broke HTTP (a malformed answer, an unknown content encoding, a cut connection).
        public static let protocolError = Code("protocolError")
        /// Too many outbound requests are in flight.
        public static let busy = Code("busy")
        /// The client is not running (not started yet, or shutting down).
        public static let notRunning = Code("notRunning")
    }

    public let code: Code
    public let message: String
    /// libcurl's result code, when the failure came from a transfer (for logs).
    public let curlCode: Int?

    public init(_ code: Code, _ message: String, curlCode: Int? = nil) {
        self.code = code
        self.message = message
        self.curlCode = curlCode
    }

    public static func == (lhs: OutboundHTTPError, rhs: OutboundHTTPError) -> Bool { lhs.code == rhs.code }
}
