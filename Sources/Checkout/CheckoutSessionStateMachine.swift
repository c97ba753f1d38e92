public import Foundation

/// What the shopper submitted with a card that the vault accepted: the card, holder, addresses, contact and
/// whether they agreed to pair their wallet with the merchant.
public struct CheckoutSubmission: Sendable, Hashable, Codable {
    public var card: VaultedCheckoutCard
    public var cardHolderName: String
    public var billingAddress: MasterpassAddress?
    public var shippingAddress: MasterpassAddress?
    public var personalInfo: MasterpassPersonalInfo?
    public var pairingConsent: Bool

    public init(
        card: VaultedCheckoutCard, cardHolderName: String, billingAddress: MasterpassAddress?,
        shippingAddress: MasterpassAddress?, personalInfo: MasterpassPersonalInfo?, pairingConsent: Bool
    ) {
        self.card = card
        self.cardHolderName = cardHolderName
        self.billingAddress = billingAddress
        self.shippingAddress = shippingAddress
        self.personalInfo = personalInfo
        self.pairingConsent = pairingConsent
    }
}

/// The life of one hosted checkout, as a pure value that returns the actions its caller must carry out.
///
///     created ──submit──► cardSubmitted ──authenticationSkipped (suppress3DS)──► completed
///                          cardSubmitted ──authenticated(Y/A)──► completed
///                          cardSubmitted ──authenticationStarted──► awaitingAuthentication
///                          awaitingAuthentication ──authenticated(Y/A)──► completed
///     cardSubmitted / awaitingAuthentication ──authenticated(N/U/R)──► created (shown as an error);
///                                                 the third failure ──► cancelled
///     created / cardSubmitted / awaitingAuthentication ──cancel──► cancelled
///     any non-final state at or after `expiresAt` ──► expired
///
/// A submit while awaiting authentication starts over with the new card (the shopper went back). Events on a
/// final state change nothing (`.alreadyFinal`), so a replayed submit, return or cancel has one effect.
public struct CheckoutSessionStateMachine: Sendable, Equatable, Codable {
    /// Where the checkout stands.
    public enum State: Sendable, Equatable, Codable {
        case created(failedAttempts: Int)
        case cardSubmitted(CheckoutSubmission, failedAttempts: Int)
        case awaitingAuthentication(CheckoutSubmission, authenticationId: String, failedAttempts: Int)
        case completed(CheckoutSubmission, authentication: CheckoutAuthenticationOutcome?)
        case cancelled
        case expired

        public var isFinal: Bool {
            switch self {
            case .completed, .cancelled, .expired: true
            case .created, .cardSubmitted, .awaitingAuthentication: false
            }
        }

        /// A short name for logs and the audit (`awaitingAuthentication`).
        public var name: String {
            switch self {
            case .created: "created"
            case .cardSubmitted: "cardSubmitted"
            case .awaitingAuthentication: "awaitingAuthentication"
            case .completed: "completed"
            case .cancelled: "cancelled"
            case .expired: "expired"
            }
        }
    }

    /// Something that happens to the checkout.
    public enum Event: Sendable, Equatable {
        /// The vault accepted the shopper's card.
        case submit(CheckoutSubmission, at: Date)
        /// 3-D Secure is suppressed for this checkout.
        case authenticationSkipped(at: Date)
        /// A challenge was started.
        case authenticationStarted(authenticationId: String, at: Date)
        /// Authentication finished (frictionless or after a challenge).
        case authenticated(CheckoutAuthenticationOutcome, at: Date)
        /// The shopper cancelled.
        case cancel(at: Date)
        /// A sweep or read noticed the time.
        case expire(now: Date)
    }

    /// What the caller must do, in order.
    public enum Action: Sendable, Equatable {
        /// Write the new state durably before answering.
        case persist
        /// Start 3-D Secure for the submitted card.
        case startAuthentication
        /// Send the shopper to the challenge page.
        case presentChallenge
        /// Build the payment data (token, cryptogram) and store it for the merchant.
        case issuePaymentData
        /// Create a pairing transaction (the shopper agreed and the checkout named a userId).
        case createPairing
        /// Send the shopper to the callback with `mpstatus=success`.
        case redirectSuccess
        /// Send the shopper to the callback with `mpstatus=cancel`.
        case redirectCancel
        /// Show the form again with this problem.
        case showError(CheckoutFormProblem)
        /// Tell the shopper the checkout expired.
        case showExpired
    }

    /// Why the page shows the form again.
    public enum CheckoutFormProblem: String, Sendable, Equatable, Codable {
        /// The issuer did not authenticate the card (`N`, `U`, `R`).
        case authenticationFailed
    }

    /// Why an event was refused.
    public enum Refusal: Error, Sendable, Equatable {
        case illegal(state: String, event: String)
    }

    /// The outcome of one event.
    public enum Outcome: Sendable, Equatable {
        case transitioned([Action])
        case unchanged
        case alreadyFinal
    }

    /// Failed authentications allowed before the checkout is cancelled.
    public static let maximumFailedAttempts = 3

    public private(set) var state: State
    /// After this instant the checkout expires.
    public let expiresAt: Date
    public let suppress3DS: Bool
    /// True when the checkout named a `userId` (pairing possible).
    public let pairingPossible: Bool

    public init(expiresAt: Date, suppress3DS: Bool, pairingPossible: Bool, state: State = .created(failedAttempts: 0)) {
        self.expiresAt = expiresAt
        self.suppress3DS = suppress3DS
        self.pairingPossible = pairingPossible
        self.state = state
    }

    /// Applies `event`; returns what to do, or throws ``Refusal``.
    public mutating func handle(_ event: Event) throws(Refusal) -> Outcome {
        if state.isFinal { return .alreadyFinal }
        if let at = event.time, at >= expiresAt {
            state = .expired
            return .transitioned([.persist, .showExpired])
        }
        switch (state, event) {
        case (.created(let failed), .submit(let submission, _)),
            (.awaitingAuthentication(_, _, let failed), .submit(let submission, _)):
            state = .cardSubmitted(submission, failedAttempts: failed)
            return .transitioned(
                suppress3DS ? [.persist] : [.persist, .startAuthentication])
        case (.cardSubmitted(let submission, _), .authenticationSkipped):
            guard suppress3DS else { break }
            return complete(submission, authentication: nil)
        case (.cardSubmitted(let submission, let failed), .authenticationStarted(let id, _)):
            guard !suppress3DS else { break }
            state = .awaitingAuthentication(submission, authenticationId: id, failedAttempts: failed)
            return .transitioned([.persist, .presentChallenge])
        case (.cardSubmitted(let submission, let failed), .authenticated(let outcome, _)),
            (.awaitingAuthentication(let submission, _, let failed), .authenticated(let outcome, _)):
            guard !suppress3DS else { break }
            if outcome.status.allowsCompletion { return complete(submission, authentication: outcome) }
            let attempts = failed + 1
            if attempts >= Self.maximumFailedAttempts {
                state = .cancelled
                return .transitioned([.persist, .redirectCancel])
            }
            state = .created(failedAttempts: attempts)
            return .transitioned([.persist, .showError(.authenticationFailed)])
        case (.created, .cancel), (.cardSubmitted, .cancel), (.awaitingAuthentication, .cancel):
            state = .cancelled
            return .transitioned([.persist, .redirectCancel])
        case (_, .expire):
            return .unchanged
        default:
            break
        }
        throw .illegal(state: state.name, event: event.name)
    }

    private mutating func complete(
        _ submission: CheckoutSubmission, authentication: CheckoutAuthenticationOutcome?
    )
        -> Outcome
    {
        state = .completed(submission, authentication: authentication)
        var actions: [Action] = [.persist, .issuePaymentData]
        if pairingPossible, submission.pairingConsent { actions.append(.createPairing) }
        actions.append(.redirectSuccess)
        return .transitioned(actions)
    }
}

extension CheckoutSessionStateMachine.Event {
    /// The instant the event happened (the expiry check's input).
    var time: Date? {
        switch self {
        case .submit(_, let at), .authenticationSkipped(let at), .authenticationStarted(_, let at),
            .authenticated(_, let at), .cancel(let at):
            at
        case .expire(let now): now
        }
    }

    var name: String {
        switch self {
        case .submit: "submit"
        case .authenticationSkipped: "authenticationSkipped"
        case .authenticationStarted: "authenticationStarted"
        case .authenticated: "authenticated"
        case .cancel: "cancel"
        case .expire: "expire"
        }
    }
}
