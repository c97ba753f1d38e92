public import VaultCore

/// Why a forward was refused or failed. Messages and field texts name fields, rules and card ids; never a card
/// number, security code, header value or body. Equal by code.
public struct ForwardError: CodedError, Equatable {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A field of the request is missing or wrong (`fieldErrors` names it). HTTP 400.
        public static let invalidParameters = Code("invalidParameters")
        /// `Url` is not an allowed destination (not listed, or resolving to a refused address). HTTP 403.
        public static let destinationRefused = Code("destinationRefused")
        /// The operator has not enabled forwarding for this client. HTTP 403.
        public static let notPermitted = Code("notPermitted")
        /// A placeholder names a card this client does not have. HTTP 404.
        public static let cardNotFound = Code("cardNotFound")
        /// The destination did not answer in time. HTTP 504.
        public static let timeout = Code("timeout")
        /// The destination could not be reached or broke the exchange. HTTP 502.
        public static let destinationFailed = Code("destinationFailed")
        /// Too many forwards in flight. HTTP 503.
        public static let busy = Code("busy")
        /// The store cannot write the audit now. HTTP 503.
        public static let unavailable = Code("unavailable")
    }

    public let code: Code
    public let message: String
    /// Field name (`Url`, `Body`, `Headers.X-Card`) → problem.
    public let fieldErrors: [String: String]

    public init(_ code: Code, _ message: String, fieldErrors: [String: String] = [:]) {
        self.code = code
        self.message = message
        self.fieldErrors = fieldErrors
    }

    public static func == (lhs: ForwardError, rhs: ForwardError) -> Bool { lhs.code == rhs.code }

    static func invalid(_ field: String, _ problem: String) -> ForwardError {
        ForwardError(
            .invalidParameters, "One or several parameters are missing or incorrect.", fieldErrors: [field: problem])
    }

    static func refused(_ problem: String) -> ForwardError {
        ForwardError(
            .destinationRefused, "Url is not an allowed forward destination: " + problem, fieldErrors: ["Url": problem])
    }
}
