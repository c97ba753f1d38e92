import Foundation
import HTTPServer
import Testing
import VaultCore

@testable import VaultAPI

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
        for wrong in [nil, "Bearer", "Bearer " + Self.token + "x", "Bearer metrics-0123456789abcdeF", Self.token,
                      "Basic " + Self.token] {
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

    @Test func theMetricsTokenIsReadFromFileAndEnvironmentAndNeverPrinted() throws {
        let fromEnvironment = try CardVaultConfiguration.load(
            file: nil, environment: ["CARDVAULT_METRICS_TOKEN": Self.token])
        #expect(fromEnvironment.metricsToken?.unsafeRevealed == Self.token)
        #expect(!"\(fromEnvironment)".contains(Self.token))
        let file = try CardVaultConfigurationTests.write(#"{"metricsToken": "\#(Self.token)"}"#)
        #expect(try CardVaultConfiguration.load(file: file, environment: [:]).metricsToken?.unsafeRevealed == Self.token)
        let none = try CardVaultConfigurationTests.write(#"{"metricsToken": null}"#)
        #expect(try CardVaultConfiguration.load(file: none, environment: [:]).metricsToken == nil)
        #expect(try CardVaultConfiguration.load(file: nil, environment: ["CARDVAULT_METRICS_TOKEN": ""]).metricsToken == nil)
        for bad in ["short-secret", "has a space in the token", String(repeating: "x", count: 257)] {
            do {
                _ = try CardVaultConfiguration.load(file: nil, environment: ["CARDVAULT_METRICS_TOKEN": bad])
                Issue.record("accepted \(bad.count) characters")
            } catch {
                #expect(error.field == "metricsToken")
                #expect(!error.message.contains(bad))
            }
        }
    }

    /// The tokenization handler zeroes the received body (shared by every copy of the request) once it has
    /// parsed the card fields.
    @Test func theTokenizationBodyIsWipedAfterParsing() async throws {
        let harness = try await MangopayHarness.make()
        let registration = try await harness.createRegistration()
        let url = registration["CardRegistrationURL"]?.stringValue ?? ""
        let path = String(url.dropFirst("http://127.0.0.1:9999".count))
        let form = "data=\(registration["PreregistrationData"]?.stringValue ?? "")&accessKeyRef="
            + "\(registration["AccessKey"]?.stringValue ?? "")&cardNumber=4970107111111119&cardExpirationDate=1229&cardCvx=123"
        let request = Request(method: .post, target: path, body: Array(form.utf8), remoteAddress: "192.0.2.10")
        let response = await harness.router.respond(to: request)
        #expect(response.bodyText.hasPrefix("data="))
        #expect(request.body.count == form.utf8.count)
        #expect(request.body.allSatisfy { $0 == 0 })
        // A malformed form is wiped too.
        let malformed = Request(method: .post, target: path, body: Array("cardNumber=4970107111111119&x=%zz".utf8))
        let refused = await harness.router.respond(to: malformed)
        #expect(refused.status == .badRequest)
        #expect(malformed.body.allSatisfy { $0 == 0 })
    }
}
