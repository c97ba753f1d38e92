public import Foundation

/// The life of a card transaction that may need 3-D Secure: a pay-in, or a card validation (the
/// same flow with no funds moving). A pure value: each event returns the actions the caller must
/// carry out (persist, redirect, credit, ...); no I/O happens here.
///
///     created ──authorize(frictionless)──► succeeded
///        │    ──authorize(decline/block)──► failed(code)
///        └────authorize(challenge)──► awaitingChallenge(expiresAt)
///                                       ├─ challengeCompleted(passed) ──► succeeded (000000)
///                                       ├─ challengeCompleted(failed) / cancelled ──► failed (refused)
///                                       └─ expire(now ≥ expiresAt), or any completion after it
///                                          ──► failed (expired)
///
/// The redirect step is the 3-D Secure challenge (refused 101301, expired 101304) or, for a PayPal pay-in, the
/// buyer's approval (cancelled 001031, expired 001034): one flow, the step's ``Redirect`` names its results.
///
/// Events on a final state change nothing and repeat the final answer (`.alreadyFinal`), so a
/// replayed return or a second completion yields exactly one transition.
public struct PayInStateMachine: Sendable, Equatable, Codable {
    /// Where the transaction stands.
    public enum State: Sendable, Equatable, Codable {
        case created
        case awaitingChallenge(expiresAt: Date)
        case succeeded
        case failed(ResultCode)

        /// The Mangopay `Status` string.
        public var status: String {
            switch self {
            case .created, .awaitingChallenge: "CREATED"
            case .succeeded: "SUCCEEDED"
            case .failed: "FAILED"
            }
        }

        /// True for SUCCEEDED and FAILED.
        public var isFinal: Bool {
            switch self {
            case .succeeded, .failed: true
            case .created, .awaitingChallenge: false
            }
        }

        /// The result to report, or nil while undecided.
        public var result: ResultCode? {
            switch self {
            case .succeeded: .success
            case .failed(let result): result
            case .created, .awaitingChallenge: nil
            }
        }
    }

    /// What the authorization step decided before any challenge.
    public enum Authorization: Sendable, Equatable {
        /// No challenge: the transaction succeeds now.
        case frictionless
        /// A challenge is needed; it must be completed before `expiresAt`.
        case challenge(expiresAt: Date)
        /// Refused now with this result (risk block 008500, a decline from the sandbox table, ...).
        case decline(ResultCode)
    }

    /// Something that happens to the transaction.
    public enum Event: Sendable, Equatable {
        case authorize(Authorization)
        /// The shopper submitted the challenge at `at`; `passed` tells whether the code was right.
        case challengeCompleted(passed: Bool, at: Date)
        /// The shopper cancelled the challenge at `at`.
        case challengeCancelled(at: Date)
        /// The sweeper (or a read) noticed the time; expires the challenge if `now` is past its end.
        case expire(now: Date)
    }

    /// What the caller must do, in order, after a transition.
    public enum Action: Sendable, Equatable {
        /// Write the new state durably before answering anyone.
        case persist
        /// Answer with `SecureModeNeeded: true` and the redirect URL to the challenge page.
        case presentChallenge
        /// Move the credited funds into the wallet (pay-ins only).
        case creditWallet
        /// Set the card's `Validity` (VALID after a first success, INVALID after a first failure).
        case markCard(valid: Bool)
        /// Wipe the CVX held in memory for this card: the first payment has used it.
        case wipeSecurityCode
    }

    /// Why an event was refused.
    public enum Refusal: Error, Sendable, Equatable {
        /// The event makes no sense in this state (e.g. a challenge result before any challenge).
        case illegal(state: State, event: Event)
    }

    /// The outcome of one event.
    public enum Outcome: Sendable, Equatable {
        /// The state changed; carry out the actions.
        case transitioned([Action])
        /// Nothing to do now (e.g. expire before the deadline).
        case unchanged
        /// The transaction was already final; answer with the final state again.
        case alreadyFinal
    }

    /// Whether funds move on success.
    public enum Purpose: String, Sendable, Equatable, Codable, CaseIterable {
        case payIn
        case cardValidation
        /// A hold on the card (`/preauthorizations`): authorized like a pay-in, captured later.
        case preauthorization
        /// A deposit hold (`/deposit-preauthorizations`), captured in full or not at all.
        case depositPreauthorization

        /// The log line of a creation: names what was created.
        var createdLogMessage: String {
            switch self {
            case .payIn: "pay-in created"
            case .cardValidation: "card validation created"
            case .preauthorization: "preauthorization created"
            case .depositPreauthorization: "deposit preauthorization created"
            }
        }
    }

    /// Where the shopper is sent while the transaction awaits them, and what a failure there reports.
    public enum Redirect: String, Sendable, Equatable, Codable, CaseIterable {
        /// The sandbox ACS page: 3-D Secure's one-time code.
        case threeDSecure
        /// The sandbox PayPal approval page: the buyer approves or cancels.
        case payPalApproval

        /// The result of a completion that failed, or of a cancel, in time.
        public var refused: ResultCode {
            self == .threeDSecure ? .authenticationFailed : .payPalCancelled
        }

        /// The result of a step left unanswered past its deadline.
        public var expired: ResultCode {
            self == .threeDSecure ? .authenticationExpired : .payPalExpired
        }
    }

    public private(set) var state: State
    public let purpose: Purpose
    /// Nil for 3-D Secure (and in records written before PayPal).
    private var redirectStep: Redirect?

    /// The transaction's redirect step.
    public var redirect: Redirect { redirectStep ?? .threeDSecure }

    public init(purpose: Purpose, state: State = .created, redirect: Redirect = .threeDSecure) {
        self.purpose = purpose
        self.state = state
        self.redirectStep = redirect == .threeDSecure ? nil : redirect
    }

    /// Applies `event`; returns what to do, or throws ``Refusal`` for an illegal event.
    public mutating func handle(_ event: Event) throws(Refusal) -> Outcome {
        if state.isFinal { return .alreadyFinal }
        switch (state, event) {
        case (.created, .authorize(.frictionless)):
            return succeed()
        case (.created, .authorize(.decline(let result))):
            return fail(result)
        case (.created, .authorize(.challenge(let expiresAt))):
            state = .awaitingChallenge(expiresAt: expiresAt)
            return .transitioned([.persist, .presentChallenge])
        case (.awaitingChallenge(let expiresAt), .challengeCompleted(let passed, let at)):
            // A completion that arrives after the deadline cannot succeed: the session expired.
            if at >= expiresAt { return fail(redirect.expired) }
            return passed ? succeed() : fail(redirect.refused)
        case (.awaitingChallenge(let expiresAt), .challengeCancelled(let at)):
            return fail(at >= expiresAt ? redirect.expired : redirect.refused)
        case (.awaitingChallenge(let expiresAt), .expire(let now)):
            return now >= expiresAt ? fail(redirect.expired) : .unchanged
        case (.created, .expire):
            return .unchanged
        default:
            throw .illegal(state: state, event: event)
        }
    }

    private mutating func succeed() -> Outcome {
        state = .succeeded
        var actions: [Action] = [.persist]
        if purpose == .payIn { actions.append(.creditWallet) }
        actions += [.markCard(valid: true), .wipeSecurityCode]
        return .transitioned(actions)
    }

    private mutating func fail(_ result: ResultCode) -> Outcome {
        state = .failed(result)
        return .transitioned([.persist, .markCard(valid: false), .wipeSecurityCode])
    }
}
