import Checkout
import Foundation
import HTTPServer

/// Maps ``CheckoutError`` to Masterpass-style JSON answers:
/// `{"Errors":{"Error":[{"Source","ReasonCode","Description","Recoverable","Details"}]}}`, one element per bad
/// field for validation failures (Source = the field's name).
struct MasterpassErrorResponse: HTTPResponseError {
    let status: HTTPStatus
    let errors: [Element]

    struct Element: Encodable, Equatable {
        var Source: String
        var ReasonCode: String
        var Description: String
        var Recoverable: Bool
        var Details: String
    }

    private struct Body: Encodable {
        struct List: Encodable {
            var elements: [Element]
            enum CodingKeys: String, CodingKey { case elements = "Error" }
        }
        var list: List
        enum CodingKeys: String, CodingKey { case list = "Errors" }
    }

    init(status: HTTPStatus, errors: [Element]) {
        self.status = status
        self.errors = errors
    }

    /// The answer for `error`.
    init(_ error: CheckoutError) {
        let (status, reason, recoverable) = Self.mapping(error.code)
        self.status = status
        if error.fieldErrors.isEmpty {
            errors = [
                Element(
                    Source: "CardVault", ReasonCode: reason, Description: error.message, Recoverable: recoverable,
                    Details: "")
            ]
        } else {
            errors = error.fieldErrors.map {
                Element(
                    Source: $0.field, ReasonCode: reason, Description: $0.message, Recoverable: true, Details: $0.field)
            }
        }
    }

    /// The 401 for a missing or unknown bearer token.
    static let authenticationFailed = MasterpassErrorResponse(
        status: 401,
        errors: [
            Element(
                Source: "Security.Credential", ReasonCode: "AUTHENTICATION_FAILED",
                Description: "Unauthorized Access to Web Service", Recoverable: false,
                Details: "Send Authorization: Bearer <token> from POST /v2.01/oauth/token")
        ])

    /// The 400 for a body that is not the expected JSON.
    static func malformedBody(_ detail: String) -> MasterpassErrorResponse {
        MasterpassErrorResponse(
            status: 400,
            errors: [
                Element(
                    Source: "body", ReasonCode: "INVALID_REQUEST", Description: detail, Recoverable: true, Details: "")
            ])
    }

    static func mapping(_ code: CheckoutError.Code) -> (HTTPStatus, String, Bool) {
        switch code {
        case .invalidRequest: (400, "INVALID_REQUEST", true)
        case .callbackNotRegistered: (400, "CALLBACK_URL_NOT_REGISTERED", true)
        case .authorizationFailed: (403, "AUTHORIZATION_FAILED", false)
        case .notFound: (404, "RESOURCE_NOT_FOUND", false)
        case .expired: (410, "TRANSACTION_EXPIRED", false)
        case .invalidState: (409, "INVALID_STATE", false)
        case .alreadyExists: (409, "RESOURCE_CONFLICT", false)
        case .unavailable: (503, "SERVICE_UNAVAILABLE", true)
        default: (500, "SYSTEM_ERROR", true)
        }
    }

    func makeResponse() -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body = (try? encoder.encode(Body(list: Body.List(elements: errors)))).map { Array($0) } ?? []
        var response = Response(
            status: status, headers: ["Content-Type": "application/json; charset=utf-8"], body: body)
        if status == .serviceUnavailable { response.headers.set("Retry-After", Response.unavailableRetryAfterSeconds) }
        response.errorCode = errors.map { $0.ReasonCode + "[" + $0.Source + "]" }.joined(separator: ",")
        return response
    }
}
