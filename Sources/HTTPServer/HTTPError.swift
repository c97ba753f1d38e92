public import VaultCore

/// An error that knows which HTTP response stands for it.
///
/// The server maps errors to responses in one place (``ErrorResponder``): an error conforming to this protocol
/// gives its own response, an ``HTTPError`` is worded by the router's ``HTTPErrorDialect``, and any other error
/// becomes a bare 500 and its details go to the log only.
public protocol HTTPResponseError: Error {
    /// The response to send (the server adds the request id header).
    func makeResponse() -> Response
}

/// The HTTP layer's own errors (404, 405, 400, 413 ...), in no dialect: the server names them with neutral codes,
/// and the ``HTTPErrorDialect`` the application gives the ``Router`` words them for its clients (the Mangopay
/// dialect's `{"Message","Type"}` with its `ressource_not_found` spelling, say).
public struct HTTPError: CodedError, Equatable {
    /// Opaque error code, in no dialect.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let badRequest = Code("bad_request")
        public static let notFound = Code("not_found")
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

/// How a dialect words the HTTP layer's own errors: the one place each dialect turns an ``HTTPError`` into a body.
/// The server has no dialect of its own; the application sets the one its clients speak on the ``Router``.
public struct HTTPErrorDialect: Sendable {
    private let body: @Sendable (HTTPError) -> Response

    /// - Parameter body: the response for an error; the error's status and extra headers (`Allow`) are applied to it.
    public init(body: @escaping @Sendable (HTTPError) -> Response) {
        self.body = body
    }

    /// The answer for `error`: the dialect's body with the error's status and headers.
    public func response(for error: HTTPError) -> Response {
        var response = body(error)
        response.status = error.status
        if response.errorCode == nil { response.errorCode = error.code.rawValue }
        for field in error.headers { response.headers.set(field.name, field.value) }
        return response
    }

    /// No dialect: `{"error": code, "message": text}` as JSON, for servers (tests, tools) that speak none.
    public static let plain = HTTPErrorDialect { error in
        var body = "{\"error\":"
        JSONText.appendString(error.code.rawValue, to: &body)
        body += ",\"message\":"
        JSONText.appendString(error.message, to: &body)
        body += "}"
        return Response(
            status: error.status, headers: ["Content-Type": "application/json; charset=utf-8"], body: Array(body.utf8))
    }
}
