import Configuration
import Foundation
import HTTPServer
import Testing
import VaultCore

@testable import CardVaultApp

@Suite struct HardeningRoutesTests {
    static let token = "metrics-0123456789abcdef"

    static func router(token: String?) -> Router {
        var configuration = CardVaultConfiguration()
        configuration.metricsToken = token.map { Redacted($0) }
        return CardVaultApplication(configuration: configuration, logger: .disabled).makeRouter()
    }

    static func metrics(_ router: Router, authorization: String?) async -> Response {
        var headers = HTTPHeaders()
        if let authorization { headers.set("Authorization", authorization) }
        return await router.respond(to: Request(method: .get, target: "/metrics", headers: headers))
    }

    @Test func metricsNeedTheTokenWhenOneIsConfigured() async {
        let router = Self.router(token: Self.token)
        for wrong in [
            nil, "Bearer", "Bearer " + Self.token + "x", "Bearer metrics-0123456789abcdeF", Self.token,
            "Basic " + Self.token,
        ] {
            let response = await Self.metrics(router, authorization: wrong)
            #expect(response.status == .unauthorized, "\(String(describing: wrong))")
            #expect(response.headers["WWW-Authenticate"] == #"Bearer realm="metrics""#)
            #expect(!response.bodyText.contains("cardvault_http"))
        }
        let good = await Self.metrics(router, authorization: "Bearer " + Self.token)
        #expect(good.status == .ok)
        #expect(good.bodyText.contains("cardvault_http_requests_total"))
        // Health stays open.
        #expect(await router.respond(to: Request(method: .get, target: "/health")).status == .ok)
    }

    @Test func metricsAreOpenWithoutAToken() async {
        #expect(await Self.metrics(Self.router(token: nil), authorization: nil).status == .ok)
    }
}
