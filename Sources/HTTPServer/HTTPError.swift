public import VaultCore

/// An error that knows which HTTP response stands for it.
///
/// The server maps errors to responses in one place: an error conforming to this protocol gives its
/// own response; any other error becomes a bare 500 and its details go to the log only.
public protocol HTTPResponseError: Error {
    /// The response to send (the server adds the request id header).
    func makeResponse() -> Response
}

/// The HTTP layer's own errors (404, 405, 400, 413 ...), answered as JSON
/// `{"Message":"…","Type":"…"}`, the error shape of the Mangopay dialect the API speaks.
public struct HTTPError: CodedError, HTTPResponseError, Equatable {
    /// Opaque error code; it is the `Type` field of the body.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let badRequest = Code("param_error")
        /// Mangopay's own spelling.
        public static let notFound = Code("ressource_not_found")
        public static let methodNotAllowed = Code("method_not_allowed")
        public static let payloadTooLarge = Code("payload_too_large")
        public static let headersTooLarge = Code("headers_too_large")
        public static let uriTooLong = Code("uri_too_long")
        public static let lengthRequired = Code("length_required")
        public static let notImplemented = Code("not_implemented")
        public static let unsupportedMediaType = Code("unsupported_media_type")
        public static let forbidden = Code("forbidden")
        public static let requestTimeout = Code("request_timeout")
        public static let unavailable = Code("service_unavailable")
        public static let internalError = Code("internal_error")
    }

    public var code: Code
    public var status: HTTPStatus
    /// Text safe to show to the client.
    public var message: String
    /// Extra response headers (`Allow` for 405).
    public var headers: HTTPHeaders
    public var location: SourceLocation

    public init(
        _ code: Code,
        status: HTTPStatus,
        message: String,
        headers: HTTPHeaders = HTTPHeaders(),
        location: SourceLocation = SourceLocation()
    ) {
        self.code = code
        self.status = status
        self.message = message
        self.headers = headers
        self.location = location
    }

    public static func == (lhs: HTTPError, rhs: HTTPError) -> Bool { lhs.code == rhs.code }

    public func makeResponse() -> Response {
        var body = "{\"Message\":"
        JSONText.appendString(message, to: &body)
        body += ",\"Type\":"
        JSONText.appendString(code.rawValue, to: &body)
        body += "}"
        var response = Response(status: status, headers: headers, body: Array(body.utf8))
        response.headers.set("Content-Type", "application/json; charset=utf-8")
        return response
    }

    public static func badRequest(_ message: String, location: SourceLocation = SourceLocation()) -> HTTPError {
        HTTPError(.badRequest, status: .badRequest, message: message, location: location)
    }

    public static let notFound = HTTPError(.notFound, status: .notFound, message: "Not found")

    public static func methodNotAllowed(allowed: [HTTPMethod]) -> HTTPError {
        HTTPError(
            .methodNotAllowed,
            status: .methodNotAllowed,
            message: "Method not allowed",
            headers: ["Allow": allowed.map(\.rawValue).joined(separator: ", ")]
        )
    }

    public static func payloadTooLarge(limit: Int) -> HTTPError {
        HTTPError(
            .payloadTooLarge,
            status: .payloadTooLarge,
            message: "Request body exceeds the limit of \(limit) bytes"
        )
    }

    public static func headersTooLarge(limit: Int) -> HTTPError {
        HTTPError(
            .headersTooLarge,
            status: .headerFieldsTooLarge,
            message: "Request headers exceed the limit of \(limit) bytes"
        )
    }

    public static func uriTooLong(limit: Int) -> HTTPError {
        HTTPError(.uriTooLong, status: .uriTooLong, message: "Request line exceeds the limit of \(limit) bytes")
    }

    public static func requestTimeout(limit: Int) -> HTTPError {
        HTTPError(
            .requestTimeout, status: .requestTimeout,
            message: "The request was not received within \(limit) seconds")
    }

    /// What every unexpected error becomes: no detail leaves the process.
    public static let internalError = HTTPError(.internalError, status: .internalServerError, message: "Internal error")
}
