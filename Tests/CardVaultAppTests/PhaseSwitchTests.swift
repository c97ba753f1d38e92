import Testing

@testable import CardVaultApp

@Suite struct PhaseSwitchTests {
    @Test func anEndFiredBeforeTheWaitIsKeptForIt() async {
        let phases = PhaseSwitch()
        phases.fire(.unsealed)
        #expect(await phases.next() == .unsealed)
    }

    @Test func aSealRequestEndsOnePhaseOnly() async throws {
        let phases = PhaseSwitch()
        async let first = phases.next()
        try await Task.sleep(for: .milliseconds(20))
        phases.fire(.sealRequested)
        #expect(await first == .sealRequested)
        async let second = phases.next()
        try await Task.sleep(for: .milliseconds(20))
        phases.fire(.unsealed)
        #expect(await second == .unsealed)
        #expect(phases.signal == nil)
    }

    @Test func aSignalEndsEveryLaterPhase() async {
        let phases = PhaseSwitch()
        phases.fire(.signal(15))
        #expect(await phases.next() == .signal(15))
        #expect(await phases.next() == .signal(15))
        #expect(await phases.nextStop() == 15)
        phases.fire(.sealRequested)
        #expect(await phases.next() == .signal(15))
    }

    @Test func cancellationWakesTheWaiterWithNothing() async {
        let phases = PhaseSwitch()
        let waiter = Task { await phases.next() }
        waiter.cancel()
        #expect(await waiter.value == nil)
    }
}
