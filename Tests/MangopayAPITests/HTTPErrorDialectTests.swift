import HTTPServer
import Testing

@testable import MangopayAPI

/// The Mangopay dialect of the HTTP layer's own errors: the shape and spellings the real API (and its SDKs)
/// use, kept exactly as the daemon has always answered.
@Suite struct HTTPErrorDialectTests {
    static func router() -> Router {
        var router = Router(errorDialect: .mangopay)
        router.get("/v2.01/:clientId/cards/:id") { _ in .text("card") }
        router.get("/boom") { _ in throw Boom() }
        return router
    }

    struct Boom: Error {}

    @Test func anUnknownPathIsMangopaysRessourceNotFound() async {
        let response = await Self.router().respond(to: Request(method: .get, target: "/nope"))
        #expect(response.status == .notFound)
        #expect(response.bodyText == #"{"Message":"Not found","Type":"ressource_not_found"}"#)
        #expect(response.headers["Content-Type"] == "application/json; charset=utf-8")
    }

    @Test func aWrongMethodKeepsItsAllowHeader() async {
        let response = await Self.router().respond(to: Request(method: .delete, target: "/v2.01/acme/cards/7"))
        #expect(response.status == .methodNotAllowed)
        #expect(response.headers["Allow"] == "GET")
        #expect(response.bodyText == #"{"Message":"Method not allowed","Type":"method_not_allowed"}"#)
    }

    @Test func aMalformedPathIsParamError() async {
        let response = await Self.router().respond(to: Request(method: .get, target: "/v2.01/%zz/cards/1"))
        #expect(response.status == .badRequest)
        #expect(response.bodyText.contains(#""Type":"param_error""#))
    }

    @Test func anUnexpectedErrorIsABare500() async {
        let response = await Self.router().respond(to: Request(method: .get, target: "/boom"))
        #expect(response.status == .internalServerError)
        #expect(response.bodyText == #"{"Message":"Internal error","Type":"internal_error"}"#)
    }

    @Test(arguments: [
        (HTTPError.Code.notFound, "ressource_not_found"), (.badRequest, "param_error"),
        (.payloadTooLarge, "payload_too_large"), (.unavailable, "service_unavailable"),
    ])
    func typesAreSpelledAsTheRealAPISpellsThem(code: HTTPError.Code, type: String) {
        #expect(MangopayErrorResponse.type(for: code) == type)
    }
}
