public import Forward
import Foundation
public import HTTPServer
public import Payments
import VaultCore

/// The CardVault extension to the Mangopay dialect for detokenize-and-forward, with the dialect's bearer auth
/// and error bodies:
/// - `POST /v2.01/{ClientId}/forward`: `{"Url","Method","Headers","Body"}` with `{{card.<CardId>.<field>}}`
///   placeholders → `{"Status","Headers","Body"}` of the destination, card numbers masked (docs/forward.md);
/// - `GET /v2.01/{ClientId}/cards/{CardId}/accesses`: the card's access audit.
public struct ForwardRoutes: RouteGroup {
    public let forward: ForwardService
    public let services: MerchantServices

    public init(forward: ForwardService, services: MerchantServices) {
        self.forward = forward
        self.services = services
    }

    public func register(on router: inout Router) {
        let api = MangopayHandlers(services: services, checkoutOrigins: [])
        let forward = forward
        router.post("/v2.01/:clientId/forward") { request in
            await api.authorized(request, idempotent: true) { clientId in
                try await Self.forward(request, clientId: clientId, service: forward, api: api)
            }
        }
        router.get("/v2.01/:clientId/cards/:id/accesses") { request in
            await api.authorized(request) { clientId in
                let page = try PageRequest(request)
                let accesses = try await forward.accesses(
                    clientId: clientId, cardId: request.parameters["id"] ?? "", page: page)
                return MangopayResponse.list(accesses, render: Self.render)
            }
        }
    }

    static func forward(
        _ request: Request, clientId: String, service: ForwardService, api: MangopayHandlers
    ) async throws -> Response {
        let parsed: ForwardRequest
        do {
            parsed = try parse(request.body)
        } catch let error as ForwardError {
            return response(error, request: request, now: api.now)
        }
        do {
            let result = try await service.forward(
                clientId: clientId, request: parsed, requestId: request.requestID, logger: request.logger)
            var headers: [(String, MangopayJSON)] = []
            for (name, value) in result.headers {
                if let index = headers.firstIndex(where: { $0.0.lowercased() == name.lowercased() }),
                    case .string(let earlier) = headers[index].1
                {
                    headers[index].1 = .string(earlier + ", " + value)
                } else {
                    headers.append((name, .string(value)))
                }
            }
            var response = MangopayResponse.json(
                .object([
                    ("Status", .int(Int64(result.status))), ("Headers", .object(headers)),
                    ("Body", .string(result.body)),
                ]))
            response.headers.set("Cache-Control", "no-store")
            return response
        } catch {
            return response(error, request: request, now: api.now)
        }
    }

    /// Reads `{"Url","Method","Headers","Body"}`; `Body` may be a string or any JSON value (sent as its compact text).
    static func parse(_ body: [UInt8]) throws -> ForwardRequest {
        let json: MangopayJSON
        do {
            json = try MangopayJSON.parse(body)
        } catch {
            throw ForwardError(
                .invalidParameters, "The body must be a JSON object",
                fieldErrors: ["Body": "the request is not valid JSON"])
        }
        guard case .object = json else {
            throw ForwardError(
                .invalidParameters, "The body must be a JSON object", fieldErrors: ["Url": "Url is required"])
        }
        var problems: [String: String] = [:]
        func text(_ key: String) -> String? {
            switch json[key] {
            case nil, .null?: return nil
            case .string(let value)?: return value
            default:
                problems[key] = "\(key) must be a string"
                return nil
            }
        }
        let url = text("Url")
        let method = text("Method")
        var headers: [(name: String, value: String)] = []
        switch json["Headers"] {
        case nil, .null?: break
        case .object(let members)?:
            for (name, value) in members {
                guard case .string(let text) = value else {
                    problems["Headers." + (ForwardService.isToken(name) ? name : "(invalid)")] =
                        "a header value must be a string"
                    continue
                }
                headers.append((name: name, value: text))
            }
        default:
            problems["Headers"] = "Headers must be an object of header names to string values"
        }
        var bodyText: String?
        switch json["Body"] {
        case nil, .null?: break
        case .string(let value)?: bodyText = value
        case let value?: bodyText = value.text
        }
        if !problems.isEmpty {
            throw ForwardError(.invalidParameters, PaymentsError.parameterMessage, fieldErrors: problems)
        }
        return ForwardRequest(url: url, method: method, headers: headers, body: bodyText)
    }

    /// The Mangopay-shaped error answer of a forward failure.
    static func response(_ error: any Error, request: Request, now: Int64) -> Response {
        guard let error = error as? ForwardError else {
            return ErrorResponder.response(for: error, request: request, dialect: .mangopay)
        }
        let (status, type): (HTTPStatus, String) =
            switch error.code {
            case .invalidParameters: (.badRequest, "param_error")
            case .destinationRefused: (.forbidden, "forward_destination_refused")
            case .notPermitted: (.forbidden, "forbidden_ressource")
            case .cardNotFound: (.notFound, "ressource_not_found")
            case .timeout: (HTTPStatus(504), "forward_timeout")
            case .destinationFailed: (HTTPStatus(502), "forward_failed")
            default: (.serviceUnavailable, "service_unavailable")
            }
        return MangopayErrorResponse.body(
            status: status, type: type, message: error.message,
            errors: error.fieldErrors.isEmpty ? nil : error.fieldErrors, request: request, now: now)
    }

    static func render(_ access: CardAccess) -> MangopayJSON {
        .object([
            ("Id", .string(access.id)), ("CardId", .string(access.cardId)), ("ClientId", .string(access.clientId)),
            ("Operation", .string(access.operation)), ("Method", .string(access.method)),
            ("DestinationHost", .string(access.destinationHost)), ("Fields", .array(access.fields.map { .string($0) })),
            ("RequestId", .string(access.requestId)), ("Status", access.status.map { .int(Int64($0)) } ?? .null),
            ("Outcome", .string(access.outcome.rawValue)), ("CreationDate", .int(access.creationDate)),
        ])
    }
}
