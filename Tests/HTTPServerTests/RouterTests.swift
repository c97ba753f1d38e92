import Testing
import VaultCore

@testable import HTTPServer

@Suite struct RouterTests {
    struct Teapot: Error, HTTPResponseError {
        func makeResponse() -> Response { .text("short and stout", status: 418) }
    }

    struct Leaky: Error, CustomStringConvertible {
        var description: String { "failed for card 4970101122334455" }
    }

    static func router() -> Router {
        var router = Router()
        router.get("/v2.01/:clientId/cards/:id") { request in
            .text(
                (request.parameters["clientId"] ?? "-") + "|" + (request.parameters["id"] ?? "-") + "|" + request.route)
        }
        router.get("/v2.01/:clientId/cards/mine") { _ in .text("mine") }
        router.post("/v2.01/:clientId/cards/:id") { request in .text("posted \(request.body.count)") }
        router.addImmediate(.get, "/health") { _ in .json(text: #"{"status":"ok"}"#) }
        router.get("/teapot") { _ in throw Teapot() }
        router.get("/boom") { _ in throw Leaky() }
        return router
    }

    @Test func routesByMethodAndPathWithDecodedParameters() async {
        let response = await Self.router().respond(to: Request(method: .get, target: "/v2.01/client%201/cards/c-9?x=1"))
        #expect(response.status == .ok)
        #expect(response.bodyText == "client 1|c-9|/v2.01/:clientId/cards/:id")
    }

    @Test func literalSegmentBeatsParameter() async {
        let response = await Self.router().respond(to: Request(method: .get, target: "/v2.01/acme/cards/mine"))
        #expect(response.bodyText == "mine")
    }

    @Test func sameShapeRoutesAreSplitByMethod() async {
        let response = await Self.router().respond(
            to: Request(method: .post, target: "/v2.01/acme/cards/7", body: Array("abc".utf8))
        )
        #expect(response.bodyText == "posted 3")
    }

    @Test(arguments: ["/nope", "/v2.01/acme/cards", "/v2.01/acme/cards/7/extra", "/health//", "/v2.01//cards/7"])
    func unknownPathIs404JSONWithRequestID(path: String) async {
        let response = await Self.router().respond(to: Request(method: .get, target: path, requestID: "req-12345678"))
        #expect(response.status == .notFound)
        #expect(response.bodyText == #"{"error":"not_found","message":"Not found"}"#)
        #expect(response.headers["x-request-id"] == "req-12345678")
        #expect(response.headers["Content-Type"]?.hasPrefix("application/json") == true)
    }

    @Test(arguments: [
        ("/v2.01/Acme/Cards/C-9", "Acme|C-9|/v2.01/:clientId/cards/:id"), ("/V2.01/acme/CARDS/c-9/", "acme|c-9|"),
        ("/v2.01/acme/cards/MINE", "mine"), ("/HEALTH", #"{"status":"ok"}"#), ("/health/", #"{"status":"ok"}"#),
    ])
    func literalSegmentsIgnoreCaseAndOneTrailingSlashWhileParametersKeepTheirCase(path: String, expected: String) async
    {
        let response = await Self.router().respond(to: Request(method: .get, target: path))
        #expect(response.status == .ok)
        #expect(response.bodyText.hasPrefix(expected), "\(path): \(response.bodyText)")
    }

    @Test func aPatternWithATrailingSlashOrCapitalsIsTheSameRoute() async {
        var router = Router()
        router.get("/Deposits/:id/transactions/") { request in .text(request.parameters["id"] ?? "") }
        let response = await router.respond(to: Request(method: .get, target: "/deposits/Dep-1/Transactions"))
        #expect(response.bodyText == "Dep-1")
    }

    @Test func wrongMethodIs405WithAllow() async {
        let response = await Self.router().respond(to: Request(method: .delete, target: "/v2.01/acme/cards/7"))
        #expect(response.status == .methodNotAllowed)
        #expect(response.headers["Allow"] == "GET, POST")
    }

    @Test func headFallsBackToGet() async {
        let response = await Self.router().respond(to: Request(method: .head, target: "/health"))
        #expect(response.status == .ok)
    }

    @Test func malformedPercentEncodingInAParameterIs400() async {
        let response = await Self.router().respond(to: Request(method: .get, target: "/v2.01/%zz/cards/1"))
        #expect(response.status == .badRequest)
        #expect(response.bodyText.contains(#""error":"bad_request""#))
    }

    @Test func responseErrorsAnswerForThemselves() async {
        let response = await Self.router().respond(to: Request(method: .get, target: "/teapot"))
        #expect(response.status.code == 418)
        #expect(response.bodyText == "short and stout")
        #expect(response.headers["X-Request-Id"] == "test")
    }

    @Test func unexpectedErrorsAreABare500WithDetailsOnlyInTheLog() async {
        let memory = MemoryLogHandler()
        let logger = Logger(handler: memory).with(["requestId": "r-1"])
        let response = await Self.router().respond(to: Request(method: .get, target: "/boom", logger: logger))
        #expect(response.status == .internalServerError)
        #expect(response.bodyText == #"{"error":"internal_error","message":"Internal error"}"#)
        let lines = memory.renderedLines
        #expect(lines.count == 1)
        #expect(lines[0].contains("Leaky"))
        #expect(lines[0].contains("XXXXXXXXXXXXXXXX"))
        #expect(!lines[0].contains("4970101122334455"))
    }

    @Test func decodeJSONNamesTheFieldNotTheValue() throws {
        struct Card: Decodable {
            var number: String
            var month: Int
        }
        let request = Request(
            method: .post, target: "/", body: Array(#"{"number":"4970101122334455","month":"x"}"#.utf8))
        #expect(throws: HTTPError.badRequest("")) { try request.decodeJSON(Card.self) }
        do {
            _ = try request.decodeJSON(Card.self)
        } catch {
            #expect(error.message == "Field month has the wrong type")
        }
        let missing = Request(method: .post, target: "/", body: Array(#"{"month":1}"#.utf8))
        #expect(throws: HTTPError.self) { try missing.decodeJSON(Card.self) }
        let good = Request(method: .post, target: "/", body: Array(#"{"number":"1","month":2}"#.utf8))
        #expect(try good.decodeJSON(Card.self).month == 2)
    }

    /// The server has no dialect: the router's ``HTTPErrorDialect`` words every error of the HTTP layer, with the
    /// error's status and headers kept.
    @Test func theRoutersDialectWordsTheHTTPLayersErrors() async {
        var router = Self.router()
        router.errorDialect = HTTPErrorDialect { error in .text("dialect:" + error.code.rawValue) }
        let missing = await router.respond(to: Request(method: .get, target: "/nope"))
        #expect(missing.status == .notFound && missing.bodyText == "dialect:not_found")
        let wrong = await router.respond(to: Request(method: .delete, target: "/v2.01/acme/cards/7"))
        #expect(wrong.status == .methodNotAllowed && wrong.bodyText == "dialect:method_not_allowed")
        #expect(wrong.headers["Allow"] == "GET, POST")
        let boom = await router.respond(to: Request(method: .get, target: "/boom"))
        #expect(boom.status == .internalServerError && boom.bodyText == "dialect:internal_error")
    }
}
