import CardVaultTesting
import Testing
import VaultCore

@testable import HTTPServer

/// The server as a service of a ``ServiceGroup``: it starts with the group, and on shutdown answers the request
/// it is handling before the group's `run()` returns (so the store is never closed under a handler).
@Suite(.serialized) struct HTTPServiceTests {
    @Test func shutdownDrainsTheInFlightRequestBeforeTheGroupReturns() async throws {
        let started = Locked(false)
        let finished = Locked(false)
        var router = Router()
        router.get("/slow") { _ in
            started.withLock { $0 = true }
            // Not cancellable: a handler that has begun runs to its end.
            await Task.detached { try? await Task.sleep(for: .milliseconds(300)) }.value
            finished.withLock { $0 = true }
            return .text("done")
        }
        let server = HTTPServer(configuration: ServerConfiguration(port: 0), router: router, logger: .disabled)
        let port = Locked(0)
        let group = ServiceGroup(
            services: [HTTPService(server: server) { bound in port.withLock { $0 = bound } }], logger: .disabled)
        let running = Task { try await group.run() }
        while port.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(5)) }
        let bound = port.withLock { $0 }
        let answer = Task { try await blocking { try RawHTTPClient.request(port: bound, path: "/slow") } }
        while !started.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }

        group.shutdown()
        // While the handler drains, a new connection is refused at once (the listening socket is shut down; it is
        // closed only once libmicrohttpd's threads have stopped).
        var refusedWhileDraining = false
        for _ in 0..<100 where !finished.withLock({ $0 }) {
            if (try? RawHTTPClient(port: bound, timeoutSeconds: 1)) == nil {
                refusedWhileDraining = !finished.withLock { $0 }
                break
            }
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(refusedWhileDraining)
        try await running.value
        #expect(finished.withLock { $0 })
        let response = try await answer.value
        #expect(response.status == 200 && response.text == "done")
        #expect(server.port == 0)  // stopped
        #expect((try? RawHTTPClient(port: bound, timeoutSeconds: 1)) == nil)
    }
}
