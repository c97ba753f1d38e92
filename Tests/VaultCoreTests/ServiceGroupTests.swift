import Foundation
import Testing

@testable import VaultCore

/// A service that records when it started and stopped, and optionally fails or returns early.
private final class ProbeService: Service {
    let name: String
    let events: Locked<[String]>
    let failure: (any Error)?
    let returnsAtOnce: Bool

    init(_ name: String, events: Locked<[String]>, failure: (any Error)? = nil, returnsAtOnce: Bool = false) {
        self.name = name
        self.events = events
        self.failure = failure
        self.returnsAtOnce = returnsAtOnce
    }

    func run() async throws {
        events.withLock { $0.append("\(name) started") }
        if let failure { throw failure }
        if !returnsAtOnce {
            while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(5)) }
            // Stopping takes a moment (draining connections); the group must wait for it.
            try? await Task.sleep(for: .milliseconds(30))
        }
        events.withLock { $0.append("\(name) stopped") }
    }
}

private struct ProbeFailure: Error, Equatable {}

@Suite struct ServiceGroupTests {
    private let logger = Logger(handler: MemoryLogHandler(), minimumLevel: .debug)

    @Test func shutdownStopsEveryServiceAndRunReturnsOnlyAfterTheLastHasStopped() async throws {
        let events = Locked<[String]>([])
        let group = ServiceGroup(
            services: [ProbeService("a", events: events), ProbeService("b", events: events)], logger: logger)
        let running = Task { try await group.run() }
        while events.withLock({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(2)) }
        group.shutdown()
        try await running.value
        events.withLock { $0.append("store closed") }
        let log = events.withLock { $0 }
        #expect(Set(log.prefix(2)) == ["a started", "b started"])
        #expect(Set(log[2..<4]) == ["a stopped", "b stopped"])
        #expect(log.last == "store closed")
    }

    @Test func aFailingServiceStopsTheOthersAndItsErrorIsRethrown() async throws {
        let events = Locked<[String]>([])
        let group = ServiceGroup(
            services: [
                ProbeService("steady", events: events), ProbeService("bad", events: events, failure: ProbeFailure()),
            ],
            logger: logger)
        await #expect(throws: ProbeFailure.self) { try await group.run() }
        #expect(events.withLock { $0.contains("steady stopped") })
    }

    @Test func aServiceThatReturnsByItselfStopsTheGroup() async throws {
        let events = Locked<[String]>([])
        let group = ServiceGroup(
            services: [
                ProbeService("steady", events: events), ProbeService("brief", events: events, returnsAtOnce: true),
            ],
            logger: logger)
        try await group.run()
        #expect(events.withLock { $0.contains("steady stopped") })
    }

    @Test func shutdownBeforeRunMakesRunReturnPromptly() async throws {
        let events = Locked<[String]>([])
        let group = ServiceGroup(services: [ProbeService("a", events: events)], logger: logger)
        group.shutdown()
        try await group.run()
        #expect(!events.withLock { $0.contains("a started") } || events.withLock { $0.contains("a stopped") })
    }

    @Test func aPeriodicServiceRunsRoundsUntilCancelledAndSurvivesAFailingRound() async throws {
        let rounds = Locked(0)
        let periodic = PeriodicService(name: "sweeper", interval: .milliseconds(2), logger: logger) {
            let round = rounds.withLock { count -> Int in
                count += 1
                return count
            }
            if round == 2 { throw ProbeFailure() }
        }
        let group = ServiceGroup(services: [periodic], logger: logger)
        let running = Task { try await group.run() }
        while rounds.withLock({ $0 }) < 4 { try await Task.sleep(for: .milliseconds(2)) }
        group.shutdown()
        try await running.value
        let afterStop = rounds.withLock { $0 }
        try await Task.sleep(for: .milliseconds(20))
        #expect(rounds.withLock { $0 } == afterStop)
    }
}
