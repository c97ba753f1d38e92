import CardVaultTesting
import Foundation
import Testing
import VaultCore

@testable import HTTPServer

#if canImport(Glibc)
import Glibc
#endif

/// Connections per address and the request deadline, against a live server.
@Suite(.serialized) struct AbuseLimitTests {
    @Test func connectionsPastThePerAddressLimitAreClosedAndCounted() async throws {
        let metrics = HTTPMetrics()
        let configuration = ServerConfiguration(port: 0, maxConnectionsPerAddress: 4)
        let server = HTTPServer(
            configuration: configuration, router: FramingLiveTests.router(), logger: .disabled,
            metrics: metrics)
        try server.start()
        let port = server.port
        let (closed, answered) = try await blocking { () -> (Int, Int) in
            let idle = try (0..<10).map { _ in try RawHTTPClient(port: port, timeoutSeconds: 2) }
            Thread.sleep(forTimeInterval: 0.3)
            // The first four are kept (and still served); the other six are closed unanswered.
            var answered = 0
            for client in idle.prefix(4) {
                client.send(FramingLiveTests.get("/health"))
                if (try? client.readResponse())?.status == 200 { answered += 1 }
            }
            let closed = idle.dropFirst(4).filter { $0.isClosedByPeer() }.count
            return (closed, answered)
        }
        #expect(answered == 4)
        #expect(closed == 6)
        #expect(metrics.connectionsRefused == 6)
        #expect(metrics.prometheusText().contains("cardvault_http_connections_refused_total 6\n"))
        await server.shutdown()
    }

    @Test func aTrickledHeaderPastTheDeadlineGets408() async throws {
        let configuration = ServerConfiguration(port: 0, requestDeadlineSeconds: 1)
        try await withLiveServer(configuration, router: FramingLiveTests.router()) { port in
            let response = try await blocking { () -> RawResponse in
                let client = try RawHTTPClient(port: port)
                client.send("GET /health HTTP/1.1\r\nHost: localhost\r\n")
                for index in 0..<5 {
                    Thread.sleep(forTimeInterval: 0.3)
                    client.send("X-Slow-\(index): 1\r\n")
                }
                client.send("\r\n")
                return try client.readResponse()
            }
            #expect(response.status == 408)
            #expect(response.header("Connection") == "close")
            // In time, the same request is served.
            let (fast, _) = try await FramingLiveTests.ask(port, FramingLiveTests.get("/health"))
            #expect(fast.status == 200)
        }
    }

    @Test func aStalledBodyEndsAtTheDeadlineNotAtTheIdleTimeout() async throws {
        let configuration = ServerConfiguration(port: 0, connectionTimeoutSeconds: 30, requestDeadlineSeconds: 1)
        try await withLiveServer(configuration, router: FramingLiveTests.router()) { port in
            let seconds = try await blocking { () -> Double in
                let client = try RawHTTPClient(port: port, timeoutSeconds: 10)
                let start = Date()
                client.send("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n0123456789")
                #expect(client.isClosedByPeer())
                return Date().timeIntervalSince(start)
            }
            #expect(seconds < 4, "closed after \(seconds) s")
            // A body that arrives in time is read whole; the connection's idle timeout is back to 30 s.
            let replies = try await exchange(
                port: port,
                [
                    "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\r\nabc",
                    FramingLiveTests.get("/health"),
                ])
            #expect(replies.map(\.status) == [200, 200])
            #expect(replies.first?.text == "3")
        }
    }
}
