import Foundation
import HTTPServer
import Testing

@testable import MangopayAPI

@Suite struct TokenizationBodyTests {
    /// The tokenization handler zeroes the received body (shared by every copy of the request) once it has
    /// parsed the card fields.
    @Test func theTokenizationBodyIsWipedAfterParsing() async throws {
        let harness = try await MangopayHarness.make()
        let registration = try await harness.createRegistration()
        let url = registration["CardRegistrationURL"]?.stringValue ?? ""
        let path = String(url.dropFirst("http://127.0.0.1:9999".count))
        let form =
            "data=\(registration["PreregistrationData"]?.stringValue ?? "")&accessKeyRef="
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
