import CardVaultTesting
import Foundation
import Testing
import VaultCore

@testable import HTTPServer

@Suite struct HardeningTests {
    @Test func noStrictTransportSecurityOverPlainHTTP() async throws {
        try await withLiveServer { port in
            let responses = try await exchange(port: port, [LiveServerTests.get("/health")])
            #expect(responses[0].status == 200)
            #expect(responses[0].header("Strict-Transport-Security") == nil)
        }
    }

    @Test func aDottedCardNumberInXRequestIdIsNeitherEchoedNorLogged() async throws {
        let memory = MemoryLogHandler()
        try await withLiveServer(logger: Logger(handler: memory, minimumLevel: .debug)) { port in
            let responses = try await exchange(
                port: port, [LiveServerTests.get("/health", headers: "X-Request-Id: 4970.1073.6205.4174\r\n")])
            let echoed = try #require(responses[0].header("X-Request-Id"))
            #expect(!echoed.contains("4970"))
            #expect(RequestIDs.isAcceptable(echoed))
        }
        let lines = memory.renderedLines.joined(separator: "\n")
        #expect(lines.contains(#""msg":"request""#))
        #expect(!lines.contains("4970"))
        #expect(!lines.contains("1073.6205"))
    }

    /// libmicrohttpd's messages about clients that went away are debug lines; others stay warnings.
    @Test(arguments: [
        ("Connection was closed by remote side with incomplete request.", LogLevel.debug),
        ("The connection was forcibly closed by remote peer", .debug),
        ("Socket has been disconnected when reading request.", .debug),
        ("Failed to send the response headers for the request for `/health'. Error: Broken pipe", .debug),
        ("Error: received handshake message out of context.", .debug),
        ("Failed to create a thread: Resource temporarily unavailable", .warning),
        ("Server reached connection limit. Closing inbound connection.", .warning),
    ])
    func abortedConnectionMessagesAreDebug(message: String, level: LogLevel) {
        #expect(LibmicrohttpdMessages.level(of: message) == level)
    }

    /// `wipeBody` zeroes the one buffer every copy of the request shares.
    @Test func wipeBodyZeroesTheSharedBuffer() throws {
        let request = Request(method: .post, target: "/tokenize/a/b", body: Array("cardNumber=4970107111111119".utf8))
        let handlerCopy = request
        let fields = try handlerCopy.formFields()
        #expect(fields["cardNumber"] == "4970107111111119")
        handlerCopy.wipeBody()
        #expect(request.body.count == 27)
        #expect(request.body.allSatisfy { $0 == 0 })
        #expect(handlerCopy.body.allSatisfy { $0 == 0 })
    }
}
