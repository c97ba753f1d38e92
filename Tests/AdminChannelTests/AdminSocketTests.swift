import CardVaultTesting
import Foundation
import Testing
import VaultCore
import VaultStore

@testable import AdminChannel

#if canImport(Glibc)
import Glibc
#endif

@Suite struct AdminSocketTests {
    @Test func requestsReachTheirHandlersWithProgressAndErrors() async throws {
        let sandbox = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: sandbox.data, withIntermediateDirectories: true)
        let path = sandbox.data + "/admin.sock"
        let handlers = AdminHandlers()
        handlers.register("echo") { arguments, progress in
            progress.report(.object(["done": .int(1), "total": .int(2)]))
            progress.report(.object(["done": .int(2), "total": .int(2)]))
            return .object(["heard": arguments["say"] ?? .null])
        }
        let server = AdminSocketServer(path: path, handlers: handlers)
        try server.start()
        var status = stat()
        #expect(stat(path, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o600)
        #expect(AdminClient.isServing(path: path))
        // Handlers registered after start are served too (the merchant API adds its own later).
        handlers.register("clients.add") { arguments, _ in .object(["added": arguments["name"] ?? .null]) }

        let client = AdminClient(path: path)
        let seen = Locked<[AdminValue]>([])
        let reply = try client.call("echo", arguments: ["say": .string("hi \"there\"\n")]) { value in
            seen.withLock { $0.append(value) }
        }
        #expect(reply == .object(["heard": .string("hi \"there\"\n")]))
        #expect(seen.withLock { $0 }.map { $0["done"]?.intValue } == [1, 2])
        #expect(try client.call("clients.add", arguments: ["name": .string("m1")])["added"] == .string("m1"))
        #expect(throws: AdminError(AdminError.unknownCommand, "")) { try client.call("nope") }
        handlers.register("fails") { _, _ in throw StoreError(.unavailable, "disk full") }
        do {
            _ = try client.call("fails")
            Issue.record("expected a failure")
        } catch let error as AdminError {
            #expect(error.code == "unavailable")
            #expect(error.message == "disk full")
        }
        await server.stop()
        #expect(access(path, F_OK) != 0)
        #expect(throws: AdminError(AdminError.notRunning, "")) { try client.call("echo") }
        #expect(!AdminClient.isServing(path: path))
    }

    @Test func aStaleSocketFileIsReplacedButALiveServerIsNot() async throws {
        let sandbox = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: sandbox.data, withIntermediateDirectories: true)
        let path = sandbox.data + "/admin.sock"
        try Data().write(to: URL(fileURLWithPath: path))
        let first = AdminSocketServer(path: path, handlers: AdminHandlers())
        try first.start()
        #expect(throws: AdminError("inUse", "")) {
            try AdminSocketServer(path: path, handlers: AdminHandlers()).start()
        }
        await first.stop()
    }

    /// Stopping waits for the command a connection is running (a rewrap, say) to finish and answer, so the store
    /// is never closed under it; the connection then ends.
    @Test func stopWaitsForTheRunningCommandToFinish() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.root + "/admin.sock"
        let handlers = AdminHandlers()
        let started = Locked(false)
        let finished = Locked(false)
        handlers.register("slow") { _, _ in
            started.withLock { $0 = true }
            await Task.detached { try? await Task.sleep(for: .milliseconds(300)) }.value
            finished.withLock { $0 = true }
            return .string("done")
        }
        let server = AdminSocketServer(path: path, handlers: handlers)
        try server.start()
        let reply = Task { try await blocking { try AdminClient(path: path).call("slow") } }
        while !started.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
        await server.stop()
        #expect(finished.withLock { $0 })
        #expect(try await reply.value == .string("done"))
        #expect(access(path, F_OK) != 0)
    }
}
