public import Foundation

/// An HTTP response: status, header fields and the body bytes.
public struct Response: Sendable {
    public var status: HTTPStatus
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// For an error answer: its machine-readable code in the dialect (`param_error`, `02625`, `not_found`), which
    /// the server writes in the request's log line. Never sent; never a value taken from the request.
    public var errorCode: String?

    public init(status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response whose body is JSON text already rendered (the cheap path for fixed answers).
    public static func json(text: String, status: HTTPStatus = .ok) -> Response {
        Response(status: status, headers: ["Content-Type": "application/json; charset=utf-8"], body: Array(text.utf8))
    }

    /// A response whose body is `value` encoded with `JSONEncoder`.
    ///
    /// - Throws: the encoder's error (mapped to a bare 500 by the server).
    public static func json(
        _ value: some Encodable,
        status: HTTPStatus = .ok,
        encoder: JSONEncoder = JSONEncoder()
    ) throws -> Response {
        let data = try encoder.encode(value)
        return Response(
            status: status,
            headers: ["Content-Type": "application/json; charset=utf-8"],
            body: Array(data)
        )
    }

    /// A plain-text response.
    public static func text(
        _ text: String, status: HTTPStatus = .ok, contentType: String = "text/plain; charset=utf-8"
    )
        -> Response
    {
        Response(status: status, headers: ["Content-Type": contentType], body: Array(text.utf8))
    }

    /// The body as UTF-8 text (for tests and logs of non-sensitive answers).
    public var bodyText: String { String(decoding: body, as: UTF8.self) }
}

extension Response {
    /// The `Retry-After` of a 503 in every dialect: the store takes writes again a second after a failed one
    /// (`FileStoreOptions.writeRetryInterval`).
    public static let unavailableRetryAfterSeconds = "1"
}
