import CardVaultTesting
import Configuration
import HTTPServer
import Testing
import VaultCore

@testable import CardVaultApp

@Suite struct HealthAndMetricsTests {
    struct Echo: RouteGroup {
        func register(on router: inout Router) {
            router.get("/v2.01/:clientId/echo") { request in .text(request.parameters["clientId"] ?? "") }
        }
    }

    static func application() -> CardVaultApplication {
        CardVaultApplication(configuration: CardVaultConfiguration(), logger: .disabled, routeGroups: [Echo()])
    }

    @Test func healthAnswersStatusOK() async {
        let response = await Self.application().makeRouter().respond(to: Request(method: .get, target: "/health"))
        #expect(response.status == .ok)
        #expect(response.bodyText == #"{"status":"ok"}"#)
        #expect(response.headers["Content-Type"] == "application/json")
    }

    @Test func routeGroupsAreMountedNextToHealthAndMetrics() async {
        let router = Self.application().makeRouter()
        #expect(router.routes.map(\.pattern) == ["/health", "/metrics", "/v2.01/:clientId/echo"])
        let response = await router.respond(to: Request(method: .get, target: "/v2.01/acme/echo"))
        #expect(response.bodyText == "acme")
    }

    @Test func metricsCountRequestsPerRouteOverALiveServer() async throws {
        var configuration = CardVaultConfiguration()
        configuration.listenPort = 0
        let application = CardVaultApplication(configuration: configuration, logger: .disabled, routeGroups: [Echo()])
        let server = try application.makeServer()
        try server.start()
        let port = server.port
        for path in ["/health", "/health", "/v2.01/a/echo", "/v2.01/b/echo", "/missing"] {
            _ = try await blocking { try RawHTTPClient.request(port: port, path: path) }
        }
        let metrics = try await blocking { try RawHTTPClient.request(port: port, path: "/metrics") }
        let (status, body) = (metrics.status, metrics.text)
        await server.shutdown()
        #expect(status == 200)
        #expect(body.contains(#"cardvault_http_requests_total{method="GET",route="/health",status="200"} 2"#))
        #expect(
            body.contains(#"cardvault_http_requests_total{method="GET",route="/v2.01/:clientId/echo",status="200"} 2"#))
        #expect(body.contains(#"cardvault_http_requests_total{method="GET",route="<unmatched>",status="404"} 1"#))
        #expect(body.contains(#"cardvault_http_request_duration_seconds_count{method="GET",route="/health"} 2"#))
        #expect(!body.contains("/v2.01/a/"))
    }
}
