public import HTTPServer
import Payments
import VaultCore

/// Error answers of the Mangopay dialect, in the real API's shape:
/// `{"Message":…,"Type":…,"Id":…,"Date":…,"errors":{field: text} | null}`; OAuth errors as
/// `{"error":…,"error_description":…}`.
enum MangopayErrorResponse {
    /// Status and `Type` for each domain error code.
    static func status(for code: PaymentsError.Code) -> (HTTPStatus, String) {
        switch code {
        case .invalidParameters, .invalidState: (.badRequest, "param_error")
        case .notFound: (.notFound, "ressource_not_found")
        case .invalidClient, .invalidToken: (.unauthorized, "invalid_credentials")
        case .forbidden: (.forbidden, "forbidden_ressource")
        case .idempotencyConflict: (.conflict, "idempotent_creation_conflict")
        case .correlationIdNotFound: (.badRequest, "correlationid_not_found")
        case .rateLimited: (.tooManyRequests, "too_many_requests")
        case .alreadyExists, .concurrentChange: (.conflict, "resource_conflict")
        case .damagedRecord: (.internalServerError, "record_damaged")
        default: (.serviceUnavailable, "service_unavailable")
        }
    }

    /// The response for a domain error on `request` at `now` (Unix seconds).
    static func response(_ error: PaymentsError, request: Request, now: Int64) -> Response {
        let (status, type) = status(for: error.code)
        return body(
            status: status, type: type, message: error.message,
            errors: error.fieldErrors.isEmpty ? nil : error.fieldErrors, request: request, now: now)
    }

    static func body(
        status: HTTPStatus, type: String, message: String, errors: [String: String]?, request: Request, now: Int64
    ) -> Response {
        let errorsValue: MangopayJSON =
            errors.map { fields in .object(fields.keys.sorted().map { ($0, .string(fields[$0]!)) }) } ?? .null
        let json = MangopayJSON.object([
            ("Message", .string(message)), ("Type", .string(type)),
            ("Id", .string(request.requestID + "#" + String(now))), ("Date", .int(now)), ("errors", errorsValue),
        ])
        var response = MangopayResponse.json(json, status: status)
        if status == .serviceUnavailable { response.headers.set("Retry-After", retryAfterSeconds) }
        // The log line of the request names the type and the fields at fault (our own names, never their values).
        response.errorCode = errors.map { type + "[" + $0.keys.sorted().joined(separator: ",") + "]" } ?? type
        return response
    }

    /// `Type` of the HTTP layer's own errors, in the real API's spelling.
    static func type(for code: HTTPError.Code) -> String {
        switch code {
        case .notFound: "ressource_not_found"
        case .badRequest: "param_error"
        default: code.rawValue
        }
    }

    /// The HTTP layer's own errors (unknown path, wrong method, limits, the 500 of an unexpected error) as
    /// `{"Message":…,"Type":…}`.
    static func httpError(_ error: HTTPError) -> Response {
        let json = MangopayJSON.object([("Message", .string(error.message)), ("Type", .string(type(for: error.code)))])
        var response = MangopayResponse.json(json, status: error.status)
        response.errorCode = type(for: error.code)
        return response
    }

    /// When a client may retry after a 503.
    static let retryAfterSeconds = Response.unavailableRetryAfterSeconds

    /// An OAuth error (`invalid_client`, `unsupported_grant_type`, …).
    static func oauth(_ error: String, _ description: String, status: HTTPStatus) -> Response {
        var response = MangopayResponse.json(
            .object([("error", .string(error)), ("error_description", .string(description))]), status: status)
        response.errorCode = error
        response.headers.set("Cache-Control", "no-store")
        if status == .unauthorized { response.headers.set("WWW-Authenticate", "Basic realm=\"cardvault\"") }
        return response
    }
}

/// Successful answers of the Mangopay dialect.
enum MangopayResponse {
    static let jsonContentType = "application/json; charset=utf-8"

    static func json(_ value: MangopayJSON, status: HTTPStatus = .ok) -> Response {
        Response(status: status, headers: ["Content-Type": jsonContentType], body: value.bytes)
    }

    /// A list page: a JSON array with the `X-Number-Of-Pages` and `X-Number-Of-Items` headers.
    static func list<Item>(_ page: Page<Item>, render: (Item) -> MangopayJSON) -> Response {
        var response = json(.array(page.items.map(render)))
        response.headers.set("X-Number-Of-Pages", String(page.totalPages))
        response.headers.set("X-Number-Of-Items", String(page.totalItems))
        return response
    }
}

extension HTTPErrorDialect {
    /// The Mangopay dialect of the HTTP layer's errors (``MangopayErrorResponse``); the daemon's router uses it for
    /// every path.
    public static let mangopay = HTTPErrorDialect { MangopayErrorResponse.httpError($0) }
}
