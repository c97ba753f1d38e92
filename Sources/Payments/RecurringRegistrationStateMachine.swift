/// The life of a recurring card pay-in registration (`/recurringpayinregistrations`). A pure value: each event
/// returns what changed; the service writes it (and its event) in the batch of the pay-in or update that caused it.
///
///     created ──CIT awaits 3DS──► authenticationNeeded ──CIT succeeded──► inProgress ◄──┐
///        │  ──CIT succeeded (frictionless)─────────────────────────────────► │   MIT succeeded / declined
///        │  ──CIT failed──► authenticationNeeded                              ├──MIT soft decline (101305)──►
///        │                                                                    │      authenticationNeeded
///        └── end (any state but ended) ──► ended (final: no pay-in, no change)
///
/// A pay-in is admitted only before `ended` and while fewer than ``maximumPayIns`` are linked; an MIT only in
/// `inProgress` (a CIT must have succeeded first, and again after a soft decline).
public struct RecurringRegistrationStateMachine: Sendable, Equatable, Codable {
    /// At most this many pay-ins (CIT and MIT together) per registration; the next one fails with 205001.
    public static let maximumPayIns = 99

    public enum State: String, Sendable, Equatable, Codable, CaseIterable {
        case created = "CREATED"
        case authenticationNeeded = "AUTHENTICATION_NEEDED"
        case inProgress = "IN_PROGRESS"
        case ended = "ENDED"
    }

    /// Who started a pay-in: the shopper (CIT, with 3-D Secure) or the merchant (MIT, shopper absent).
    public enum Initiator: String, Sendable, Equatable, Codable, CaseIterable {
        case customer
        case merchant
    }

    public enum Event: Sendable, Equatable {
        /// A pay-in asks to be linked to the registration.
        case admit(Initiator)
        /// The linked CIT awaits its 3-D Secure challenge.
        case authenticationPending
        /// A linked pay-in succeeded.
        case succeeded(Initiator)
        /// A linked pay-in failed with this result.
        case failed(Initiator, ResultCode)
        /// The merchant ends the registration (`Status: ENDED`).
        case end
    }

    /// Why an event was refused.
    public enum Refusal: Error, Sendable, Equatable {
        /// The registration is ENDED: no pay-in and no change any more.
        case ended
        /// ``maximumPayIns`` pay-ins are linked already (result 205001).
        case limitReached
        /// An MIT needs a succeeded CIT first (or again, after a soft decline).
        case authenticationNeeded
    }

    public enum Outcome: Sendable, Equatable {
        /// The state changed to the given one (an event to report).
        case transitioned(State)
        /// The pay-in was admitted and counted; the state did not change.
        case admitted
        /// Nothing changed.
        case unchanged
    }

    public private(set) var state: State
    /// Pay-ins admitted so far (CIT and MIT).
    public private(set) var payInsLinked: Int

    public init(state: State = .created, payInsLinked: Int = 0) {
        self.state = state
        self.payInsLinked = payInsLinked
    }

    /// Applies `event`; returns what changed, or throws ``Refusal``.
    public mutating func handle(_ event: Event) throws(Refusal) -> Outcome {
        switch event {
        case .admit(let initiator):
            if state == .ended { throw .ended }
            if payInsLinked >= Self.maximumPayIns { throw .limitReached }
            if initiator == .merchant, state != .inProgress { throw .authenticationNeeded }
            payInsLinked += 1
            return .admitted
        case .authenticationPending:
            if state == .ended { throw .ended }
            return move(to: .authenticationNeeded)
        case .succeeded(let initiator):
            // A pay-in admitted before the end may complete after it: the money moves, the registration stays ended.
            if state == .ended { return .unchanged }
            return initiator == .customer ? move(to: .inProgress) : .unchanged
        case .failed(let initiator, let result):
            if state == .ended { return .unchanged }
            if initiator == .customer || result == .softDecline { return move(to: .authenticationNeeded) }
            return .unchanged
        case .end:
            if state == .ended { return .unchanged }
            return move(to: .ended)
        }
    }

    private mutating func move(to next: State) -> Outcome {
        guard next != state else { return .unchanged }
        state = next
        return .transitioned(next)
    }
}

extension ResultCode {
    /// The issuer asks for a new authentication of the shopper (an MIT refused: a CIT is needed).
    public static let softDecline = ResultCode(code: "101305", message: "SecureMode: Soft decline")
    /// Mangopay's answer to the 100th pay-in of one recurring registration.
    public static let dataValidationError = ResultCode(code: "205001", message: "Data validation error")
}
