import Foundation
import Testing

@testable import Payments

/// Every state × event pair of the 3-D Secure state machine, with the expected next state and
/// outcome written out by hand.
@Suite struct PayInStateMachineTests {
    static let deadline = Date(timeIntervalSince1970: 1_800_000_600)
    static let before = deadline.addingTimeInterval(-1)
    static let after = deadline  // the deadline itself is already too late

    typealias Machine = PayInStateMachine
    typealias State = Machine.State
    typealias Event = Machine.Event

    static let states: [(String, State)] = [
        ("created", .created),
        ("awaiting", .awaitingChallenge(expiresAt: deadline)),
        ("succeeded", .succeeded),
        ("failed", .failed(.doNotHonor)),
    ]

    static let events: [(String, Event)] = [
        ("authorize-frictionless", .authorize(.frictionless)),
        ("authorize-challenge", .authorize(.challenge(expiresAt: deadline))),
        ("authorize-decline", .authorize(.decline(.blockedByFraudPolicy))),
        ("passed-in-time", .challengeCompleted(passed: true, at: before)),
        ("passed-late", .challengeCompleted(passed: true, at: after)),
        ("failed-in-time", .challengeCompleted(passed: false, at: before)),
        ("cancelled-in-time", .challengeCancelled(at: before)),
        ("cancelled-late", .challengeCancelled(at: after)),
        ("expire-early", .expire(now: before)),
        ("expire-due", .expire(now: after)),
    ]

    enum Expected: Equatable {
        case to(State, [Machine.Action])
        case unchanged
        case alreadyFinal
        case illegal
    }

    static let success: [Machine.Action] = [.persist, .creditWallet, .markCard(valid: true), .wipeSecurityCode]
    static let failure: [Machine.Action] = [.persist, .markCard(valid: false), .wipeSecurityCode]

    /// The whole table, by hand.
    static func expected(_ state: String, _ event: String) -> Expected {
        switch (state, event) {
        case ("succeeded", _), ("failed", _): return .alreadyFinal
        case ("created", "authorize-frictionless"): return .to(.succeeded, success)
        case ("created", "authorize-challenge"):
            return .to(.awaitingChallenge(expiresAt: deadline), [.persist, .presentChallenge])
        case ("created", "authorize-decline"): return .to(.failed(.blockedByFraudPolicy), failure)
        case ("created", "expire-early"), ("created", "expire-due"): return .unchanged
        case ("created", _): return .illegal
        case ("awaiting", "passed-in-time"): return .to(.succeeded, success)
        case ("awaiting", "passed-late"), ("awaiting", "cancelled-late"), ("awaiting", "expire-due"):
            return .to(.failed(.authenticationExpired), failure)
        case ("awaiting", "failed-in-time"), ("awaiting", "cancelled-in-time"):
            return .to(.failed(.authenticationFailed), failure)
        case ("awaiting", "expire-early"): return .unchanged
        case ("awaiting", _): return .illegal
        default: fatalError("table incomplete for \(state) × \(event)")
        }
    }

    static var pairs: [(String, String)] {
        states.flatMap { state in events.map { (state.0, $0.0) } }
    }

    @Test(arguments: pairs)
    func everyStateAndEvent(_ stateName: String, _ eventName: String) {
        let state = Self.states.first { $0.0 == stateName }!.1
        let event = Self.events.first { $0.0 == eventName }!.1
        var machine = Machine(purpose: .payIn, state: state)
        let expected = Self.expected(stateName, eventName)
        do {
            let outcome = try machine.handle(event)
            switch (outcome, expected) {
            case (.transitioned(let actions), .to(let next, let expectedActions)):
                #expect(actions == expectedActions)
                #expect(machine.state == next)
            case (.unchanged, .unchanged), (.alreadyFinal, .alreadyFinal):
                #expect(machine.state == state)
            default:
                Issue.record("\(stateName) × \(eventName): got \(outcome), expected \(expected)")
            }
        } catch {
            #expect(expected == .illegal, "\(stateName) × \(eventName) was refused")
            #expect(error == .illegal(state: state, event: event))
            #expect(machine.state == state)
        }
    }

    @Test func cardValidationNeverCreditsAWallet() throws {
        var machine = Machine(purpose: .cardValidation)
        #expect(
            try machine.handle(.authorize(.frictionless))
                == .transitioned([.persist, .markCard(valid: true), .wipeSecurityCode]))
    }

    @Test func replayedCompletionsGiveOneTransitionAndTheSameAnswer() throws {
        var machine = Machine(purpose: .payIn)
        _ = try machine.handle(.authorize(.challenge(expiresAt: Self.deadline)))
        var transitions = 0
        for event in [
            Event.challengeCompleted(passed: true, at: Self.before),
            .challengeCompleted(passed: false, at: Self.before),
            .challengeCancelled(at: Self.before), .expire(now: Self.after),
        ] {
            if case .transitioned = try machine.handle(event) { transitions += 1 }
            #expect(machine.state == .succeeded)
            #expect(machine.state.result == .success)
        }
        #expect(transitions == 1)
    }

    @Test func statusStringsFollowTheMangopayDialect() {
        #expect(State.created.status == "CREATED")
        #expect(State.awaitingChallenge(expiresAt: Self.deadline).status == "CREATED")
        #expect(State.succeeded.status == "SUCCEEDED")
        #expect(State.failed(.authenticationFailed).status == "FAILED")
        #expect(State.failed(.authenticationExpired).result?.code == "101304")
    }

    @Test func stateSurvivesEncodingForARestart() throws {
        var machine = Machine(purpose: .payIn)
        _ = try machine.handle(.authorize(.challenge(expiresAt: Self.deadline)))
        let decoded = try JSONDecoder().decode(Machine.self, from: JSONEncoder().encode(machine))
        #expect(decoded == machine)
        var restarted = decoded
        #expect(try restarted.handle(.expire(now: Self.after)) == .transitioned(Self.failure))
    }
}
