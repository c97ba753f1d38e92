import Foundation
import HTTPServer
import Testing
import VaultCore

@testable import MangopayAPI
@testable import Payments

/// The routes' rate limits in process, with the harness's manual clock: an IPv6 /64 is one client
/// however its hosts rotate, and a limited client recovers as its bucket refills.
@Suite struct RateLimitRoutesTests {
    static func tokenRequest(_ harness: MangopayHarness, apiKey: String, from remote: String) async -> Response {
        await harness.send(
            "POST", "/v2.01/oauth/token", body: "grant_type=client_credentials",
            headers: [
                "Authorization": "Basic " + Data("\(harness.clientId):\(apiKey)".utf8).base64EncodedString(),
                "Content-Type": "application/x-www-form-urlencoded",
            ],
            authorized: false, remote: remote)
    }

    @Test func failedTokenRequestsRotatingThroughAnIPv6Slash64AreLimitedAsOneClient() async throws {
        let harness = try await MangopayHarness.make()
        let burst = PaymentsConfiguration().tokenFailuresPerMinutePerAddress
        for host in 1...burst {
            let address = "2001:db8:7:7::" + String(host, radix: 16)
            let response = await Self.tokenRequest(harness, apiKey: "wrong", from: address)
            #expect(response.status == .unauthorized)
        }
        let limited = await Self.tokenRequest(harness, apiKey: "wrong", from: "2001:db8:7:7:ffff:1:2:3")
        #expect(limited.status == .tooManyRequests)
        #expect(limited.headers["Retry-After"] == "2")  // 30 a minute: one token every 2 s
        #expect(limited.json["Type"]?.stringValue == "too_many_requests")
        // Refused before the credentials are checked: even the right key gets 429 from that /64.
        let good = await Self.tokenRequest(harness, apiKey: harness.apiKey, from: "2001:db8:7:7::99")
        #expect(good.status == .tooManyRequests)
        // The neighbouring /64 and an IPv4 client are other clients; successes never count.
        #expect(await Self.tokenRequest(harness, apiKey: "wrong", from: "2001:db8:7:8::1").status == .unauthorized)
        for _ in 0..<(burst * 2) {
            #expect(await Self.tokenRequest(harness, apiKey: harness.apiKey, from: "192.0.2.77").status == .ok)
        }
        harness.clock.advance(by: 2)
        #expect(await Self.tokenRequest(harness, apiKey: harness.apiKey, from: "2001:db8:7:7::5").status == .ok)
    }

    @Test func acsPageRequestsAreLimitedPerAddressWithAPage() async throws {
        let harness = try await MangopayHarness.make()
        let burst = PaymentsConfiguration().acsRequestsPerMinutePerAddress
        for host in 0..<burst {
            let response = await harness.send(
                "GET", "/acs/payin/\(harness.clientId)/nothing?s=x", authorized: false,
                remote: "2001:db8:9:9:\(host)::1")
            #expect(response.status == .notFound)
        }
        let limited = await harness.send(
            "GET", "/acs/payin/\(harness.clientId)/nothing?s=x", authorized: false, remote: "2001:db8:9:9::abcd")
        #expect(limited.status == .tooManyRequests)
        #expect(limited.headers["Retry-After"] == "1")
        #expect(limited.headers["Content-Type"]?.hasPrefix("text/html") == true)
        #expect(limited.headers["Cache-Control"] == "no-store")
        let other = await harness.send(
            "GET", "/acs/payin/\(harness.clientId)/nothing?s=x", authorized: false, remote: "198.51.100.1")
        #expect(other.status == .notFound)
    }
}
