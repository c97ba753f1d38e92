import CardVaultApp
import Foundation
import Testing
import VaultCore
import VaultStore

#if canImport(Glibc)
import Glibc
#endif

/// The daemon's shutdown order: a SIGTERM stops every service, each finishes what it is doing, and only then is
/// the store closed.
@Suite(.serialized) struct DaemonLifecycleTests {
    /// A job in the middle of a round (here a 300 ms one that ends with a store write) when SIGTERM comes: the
    /// round completes and writes, the other services stop, and the store closes after all of them.
    @Test func sigtermStopsEveryServiceAndClosesTheStoreAfterTheLastJob() async throws {
        let store = InMemoryRecordStore()
        let events = Locked<[String]>([])
        let logs = MemoryLogHandler()
        let logger = Logger(handler: logs, minimumLevel: .debug)
        let roundStarted = Locked(false)
        let job = PeriodicService(name: "slow-job", interval: .milliseconds(10), logger: logger) {
            roundStarted.withLock { $0 = true }
            events.withLock { $0.append("round started") }
            // A round that has begun is not interrupted: this wait ignores the group's cancellation.
            await Task.detached { try? await Task.sleep(for: .milliseconds(300)) }.value
            try await store.put("jobs", id: "round", value: Array("done".utf8), condition: .unconditional)
            events.withLock { $0.append("round finished") }
        }
        let idle = WaitingService(name: "idle", events: events)

        let signals = await TerminationSignals.catching([SIGTERM])
        defer { signals.cancel(restoreDefaults: true) }
        let daemon = Task {
            try await DaemonLifecycle.run(
                services: [job, idle], logger: logger, until: { await signals.next() },
                close: { events.withLock { $0.append("store closed") } })
        }
        while !roundStarted.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
        kill(getpid(), SIGTERM)
        try await daemon.value

        let order = events.withLock { $0 }
        #expect(order.last == "store closed")
        let finished = try #require(order.firstIndex(of: "round finished"))
        let idleStopped = try #require(order.firstIndex(of: "idle stopped"))
        let closed = try #require(order.firstIndex(of: "store closed"))
        #expect(finished < closed && idleStopped < closed)
        #expect(order.filter { $0 == "round started" }.count == order.filter { $0 == "round finished" }.count)
        #expect(try await store.get("jobs", id: "round")?.value == Array("done".utf8))

        let messages = logs.all.map(\.message)
        #expect(messages.contains("shutting down"))
        let stopped = logs.all.enumerated().filter { $0.element.message == "service stopped" }
        let names = stopped.compactMap { record -> String? in
            if case .string(let name)? = record.element.metadata["service"] { name } else { nil }
        }
        #expect(names.sorted() == ["idle", "slow-job"])
        let storeClosed = try #require(messages.firstIndex(of: "store closed"))
        #expect(stopped.allSatisfy { $0.offset < storeClosed })
        #expect(messages.last == "stopped")
    }

    /// A service that fails stops the others too; the store is still closed after all of them, and the failure
    /// comes out of `run`.
    @Test func aFailingServiceStopsTheGroupAndTheStoreStillClosesLast() async throws {
        struct Broken: Error {}
        struct Failing: Service {
            let name = "failing"
            func run() async throws {
                try await Task.sleep(for: .milliseconds(20))
                throw Broken()
            }
        }
        let events = Locked<[String]>([])
        let neverSignalled: @Sendable () async -> Int32? = {
            await untilCancelled()
            return nil
        }
        let close = { events.withLock { $0.append("store closed") } }
        await #expect(throws: Broken.self) {
            try await DaemonLifecycle.run(
                services: [Failing(), WaitingService(name: "idle", events: events)], logger: .disabled,
                until: neverSignalled, close: close)
        }
        #expect(events.withLock { $0 } == ["idle stopped", "store closed"])
    }
}

/// Waits until cancelled, then records that it stopped.
private struct WaitingService: Service {
    let name: String
    let events: Locked<[String]>

    func run() async throws {
        await untilCancelled()
        try? await Task.detached { try await Task.sleep(for: .milliseconds(50)) }.value
        events.withLock { $0.append("\(name) stopped") }
    }
}
