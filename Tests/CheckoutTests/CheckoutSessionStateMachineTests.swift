import CardKit
import Foundation
import Testing

@testable import Checkout

@Suite struct CheckoutSessionStateMachineTests {
    typealias Machine = CheckoutSessionStateMachine
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    static let deadline = start.addingTimeInterval(1800)
    static let submission = CheckoutSubmission(
        card: VaultedCheckoutCard(
            cardId: "card1", brand: .mastercard, alias: "555555XXXXXX4444", expiryMonth: 12, expiryYear: 2029,
            profilingReference: nil),
        cardHolderName: "Ada", billingAddress: nil, shippingAddress: nil, personalInfo: nil, pairingConsent: true)
    static let passed = CheckoutAuthenticationOutcome(
        status: .authenticated, challenged: true, resultCode: "000000", resultMessage: "Success")
    static let failed = CheckoutAuthenticationOutcome(
        status: .notAuthenticated, challenged: true, resultCode: "101301", resultMessage: "failed")

    func machine(suppress3DS: Bool = false, pairing: Bool = false) -> Machine {
        Machine(expiresAt: Self.deadline, suppress3DS: suppress3DS, pairingPossible: pairing)
    }

    @Test func frictionlessPathCompletesAndIssuesPaymentData() throws {
        var m = machine()
        #expect(
            try m.handle(.submit(Self.submission, at: Self.start)) == .transitioned([.persist, .startAuthentication]))
        #expect(
            try m.handle(.authenticated(Self.passed, at: Self.start))
                == .transitioned([.persist, .issuePaymentData, .redirectSuccess]))
        #expect(m.state == .completed(Self.submission, authentication: Self.passed))
        #expect(try m.handle(.cancel(at: Self.start)) == .alreadyFinal)
        #expect(m.state.isFinal)
    }

    @Test func challengePathWaitsThenCompletesWithPairing() throws {
        var m = machine(pairing: true)
        _ = try m.handle(.submit(Self.submission, at: Self.start))
        #expect(
            try m.handle(.authenticationStarted(authenticationId: "a1", at: Self.start))
                == .transitioned([.persist, .presentChallenge]))
        #expect(m.state == .awaitingAuthentication(Self.submission, authenticationId: "a1", failedAttempts: 0))
        #expect(
            try m.handle(.authenticated(Self.passed, at: Self.start))
                == .transitioned([.persist, .issuePaymentData, .createPairing, .redirectSuccess]))
    }

    @Test func suppressed3DSSkipsAuthentication() throws {
        var m = machine(suppress3DS: true)
        #expect(try m.handle(.submit(Self.submission, at: Self.start)) == .transitioned([.persist]))
        #expect(
            try m.handle(.authenticationSkipped(at: Self.start))
                == .transitioned([.persist, .issuePaymentData, .redirectSuccess]))
        #expect(m.state == .completed(Self.submission, authentication: nil))
    }

    @Test func authenticationCannotBeSkippedUnlessSuppressed() throws {
        var m = machine()
        _ = try m.handle(.submit(Self.submission, at: Self.start))
        #expect(throws: Machine.Refusal.self) { try m.handle(.authenticationSkipped(at: Self.start)) }
        var suppressed = machine(suppress3DS: true)
        _ = try suppressed.handle(.submit(Self.submission, at: Self.start))
        #expect(throws: Machine.Refusal.self) {
            try suppressed.handle(.authenticated(Self.passed, at: Self.start))
        }
    }

    @Test func failedAuthenticationReturnsToTheFormThenCancelsOnTheThird() throws {
        var m = machine()
        for attempt in 1...2 {
            _ = try m.handle(.submit(Self.submission, at: Self.start))
            #expect(
                try m.handle(.authenticated(Self.failed, at: Self.start))
                    == .transitioned([.persist, .showError(.authenticationFailed)]))
            #expect(m.state == .created(failedAttempts: attempt))
        }
        _ = try m.handle(.submit(Self.submission, at: Self.start))
        #expect(
            try m.handle(.authenticated(Self.failed, at: Self.start)) == .transitioned([.persist, .redirectCancel]))
        #expect(m.state == .cancelled)
    }

    @Test func cancelFromEveryOpenState() throws {
        var created = machine()
        #expect(try created.handle(.cancel(at: Self.start)) == .transitioned([.persist, .redirectCancel]))
        var submitted = machine()
        _ = try submitted.handle(.submit(Self.submission, at: Self.start))
        #expect(try submitted.handle(.cancel(at: Self.start)) == .transitioned([.persist, .redirectCancel]))
        var waiting = machine()
        _ = try waiting.handle(.submit(Self.submission, at: Self.start))
        _ = try waiting.handle(.authenticationStarted(authenticationId: "a", at: Self.start))
        #expect(try waiting.handle(.cancel(at: Self.start)) == .transitioned([.persist, .redirectCancel]))
        #expect(try waiting.handle(.cancel(at: Self.start)) == .alreadyFinal)
    }

    @Test func resubmittingWhileAwaitingStartsOver() throws {
        var m = machine()
        _ = try m.handle(.submit(Self.submission, at: Self.start))
        _ = try m.handle(.authenticationStarted(authenticationId: "a", at: Self.start))
        #expect(
            try m.handle(.submit(Self.submission, at: Self.start)) == .transitioned([.persist, .startAuthentication]))
        #expect(m.state == .cardSubmitted(Self.submission, failedAttempts: 0))
    }

    @Test func expiresAtTheDeadlineAndNotBefore() throws {
        var m = machine()
        #expect(try m.handle(.expire(now: Self.deadline.addingTimeInterval(-1))) == .unchanged)
        #expect(try m.handle(.expire(now: Self.deadline)) == .transitioned([.persist, .showExpired]))
        #expect(m.state == .expired)
        var late = machine()
        _ = try late.handle(.submit(Self.submission, at: Self.start))
        #expect(
            try late.handle(.authenticated(Self.passed, at: Self.deadline)) == .transitioned([.persist, .showExpired]))
        #expect(try late.handle(.authenticated(Self.passed, at: Self.start)) == .alreadyFinal)
    }

    @Test func illegalEventsAreRefused() {
        var m = machine()
        #expect(throws: Machine.Refusal.self) { try m.handle(.authenticated(Self.passed, at: Self.start)) }
        #expect(throws: Machine.Refusal.self) {
            try m.handle(.authenticationStarted(authenticationId: "a", at: Self.start))
        }
        #expect(m.state == .created(failedAttempts: 0))
    }
}
