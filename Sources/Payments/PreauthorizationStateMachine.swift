/// The hold of a preauthorization or a deposit preauthorization on a card, after (or while) its authorization runs
/// through 3-D Secure in ``PayInStateMachine``: its `PaymentStatus`, what is left to capture, and its captures. A
/// pure value: each event returns the actions the caller must carry out; no I/O happens here.
///
///     waiting ──capture(amount ≤ remaining, before expiry, authorization SUCCEEDED)──► validated
///        │    ──cancel──► canceled
///        └────expire(now ≥ expiresAt)──► expired
///     validated ──capture (multi-capture only: the first and this capture carried an Idempotency-Key)──► validated
///     waiting ──capture prior to complement (deposit, in full)──► toBeCompleted ──complement (any amount)──► validated
///
/// A deposit is captured in full, once, or in full and then complemented once beyond the hold (the complement is
/// not a capture of the hold). `remaining` is always `authorized` minus the sum of the captures, exactly: a capture
/// above it is refused, so it never goes negative and no subtraction can overflow.
public struct PreauthorizationStateMachine: Sendable, Equatable, Codable {
    /// Which resource holds the funds.
    public enum Kind: String, Sendable, Equatable, Codable, CaseIterable {
        /// `/preauthorizations`: 7 days, partial and multiple captures.
        case preauthorization
        /// `/deposit-preauthorizations`: 30 days, one full capture.
        case deposit
    }

    /// The Mangopay `PaymentStatus`.
    public enum PaymentStatus: String, Sendable, Equatable, Codable, CaseIterable {
        case waiting = "WAITING"
        case validated = "VALIDATED"
        case canceled = "CANCELED"
        case expired = "EXPIRED"
        /// A deposit captured in full before a complement: the complement is still to come.
        case toBeCompleted = "TO_BE_COMPLETED"
    }

    /// Which capture a deposit's capture is: the plain full capture, the full capture that a complement will follow
    /// (`capture-with-complement`), or that complement (`complement`, funds beyond the hold).
    public enum CaptureStep: Sendable, Equatable {
        case capture
        case priorToComplement
        case complement
    }

    /// One capture: the pay-in it made and what it took.
    public struct Capture: Sendable, Equatable, Codable {
        public var payInId: String
        public var amount: Int64

        public init(payInId: String, amount: Int64) {
            self.payInId = payInId
            self.amount = amount
        }
    }

    /// Something that happens to the hold. Times are Unix seconds.
    public enum Event: Sendable, Equatable {
        /// Capture `amount` as the new pay-in `payInId`. `multiCapture`: the request carried an `Idempotency-Key`;
        /// `authorized`: the card authorization (3-D Secure) SUCCEEDED.
        case capture(
            payInId: String, amount: Int64, multiCapture: Bool, authorized: Bool, now: Int64,
            step: CaptureStep = .capture)
        /// The merchant cancels the hold (`PUT` with `PaymentStatus: CANCELED`).
        case cancel(now: Int64)
        /// The sweeper (or a read) noticed the time.
        case expire(now: Int64)
    }

    /// What the caller must do, in order, after a transition.
    public enum Action: Sendable, Equatable {
        /// Write the new hold durably (with the same batch as the rest).
        case persist
        /// Create the capture pay-in `payInId` for `amount` and credit its wallet.
        case creditCapture(payInId: String, amount: Int64)
        /// Remove the hold from the expiry sweeper's list: it can no longer expire.
        case stopExpiry
        /// Record this event in the same batch.
        case emit(EventType)
    }

    /// Why an event was refused.
    public enum Refusal: Error, Sendable, Equatable {
        /// The card authorization did not succeed (still CREATED, or FAILED): nothing is held.
        case notAuthorized
        /// The hold is no longer waiting (canceled, expired, or already captured without multi-capture).
        case notWaiting(PaymentStatus)
        /// The hold's expiration date has passed.
        case expired
        /// A capture must take a positive amount.
        case amountNotPositive
        /// The capture is above what is left (`remaining`).
        case aboveRemaining(remaining: Int64)
        /// A deposit is captured in full: `amount` exactly.
        case fullCaptureRequired(amount: Int64)
        /// The hold is multi-captured: every further capture needs an `Idempotency-Key`.
        case multiCaptureNeedsIdempotencyKey
        /// Complements are for deposits only.
        case complementOfAPreauthorization
    }

    /// The outcome of one event.
    public enum Outcome: Sendable, Equatable {
        case transitioned([Action])
        case unchanged
    }

    public internal(set) var kind: Kind
    public internal(set) var paymentStatus: PaymentStatus
    /// The authorized amount (`DebitedFunds.Amount`), minor units.
    public internal(set) var authorized: Int64
    /// `RemainingFunds.Amount`: `authorized` minus every capture.
    public internal(set) var remaining: Int64
    /// `ExpirationDate`, Unix seconds.
    public internal(set) var expiresAt: Int64
    /// Set by a first capture with an `Idempotency-Key`: further captures may follow.
    public internal(set) var multiCapture: Bool
    public internal(set) var captures: [Capture]
    /// A deposit's complement: funds charged beyond the hold after its capture prior to complement (not a capture
    /// of the hold, so not in `captures`).
    public internal(set) var complement: Capture?

    /// How long a hold lasts: 7 days for a preauthorization, 30 for a deposit.
    public static func lifetime(_ kind: Kind) -> Int64 {
        kind == .preauthorization ? 7 * 86_400 : 30 * 86_400
    }

    /// A new waiting hold of `authorized` minor units from `now` (Unix seconds).
    public init(kind: Kind, authorized: Int64, now: Int64) {
        self.kind = kind
        self.paymentStatus = .waiting
        self.authorized = authorized
        self.remaining = authorized
        // Amounts and clocks are far inside 64 bits; saturate rather than trap on a clock gone wild.
        let (end, overflow) = now.addingReportingOverflow(Self.lifetime(kind))
        self.expiresAt = overflow ? .max : end
        self.multiCapture = false
        self.captures = []
    }

    /// The sum of the captures (never above `authorized`).
    public var captured: Int64 { authorized - remaining }

    /// Applies `event`; returns what to do, or throws ``Refusal``.
    public mutating func handle(_ event: Event) throws(Refusal) -> Outcome {
        switch event {
        case .capture(let payInId, let amount, let multi, let authorizationSucceeded, let now, let step):
            if step != .capture, kind != .deposit { throw .complementOfAPreauthorization }
            if step == .complement { return try complement(payInId: payInId, amount: amount) }
            return try capture(
                payInId: payInId, amount: amount, multi: multi, authorizationSucceeded: authorizationSucceeded,
                now: now, beforeComplement: step == .priorToComplement)
        case .cancel(let now):
            switch paymentStatus {
            case .canceled: return .unchanged
            case .validated, .expired, .toBeCompleted: throw .notWaiting(paymentStatus)
            case .waiting:
                if now >= expiresAt { throw .expired }
                paymentStatus = .canceled
                return .transitioned([.persist, .stopExpiry, .emit(eventType(.canceled))])
            }
        case .expire(let now):
            guard paymentStatus == .waiting, now >= expiresAt else { return .unchanged }
            paymentStatus = .expired
            return .transitioned([.persist, .stopExpiry, .emit(eventType(.expired))])
        }
    }

    private mutating func capture(
        payInId: String, amount: Int64, multi: Bool, authorizationSucceeded: Bool, now: Int64, beforeComplement: Bool
    ) throws(Refusal) -> Outcome {
        switch paymentStatus {
        case .canceled, .expired, .toBeCompleted: throw .notWaiting(paymentStatus)
        case .validated:
            guard kind == .preauthorization, multiCapture else { throw .notWaiting(.validated) }
            guard multi else { throw .multiCaptureNeedsIdempotencyKey }
        case .waiting: break
        }
        if now >= expiresAt { throw .expired }
        guard authorizationSucceeded else { throw .notAuthorized }
        guard amount > 0 else { throw .amountNotPositive }
        if kind == .deposit, amount != authorized { throw .fullCaptureRequired(amount: authorized) }
        guard amount <= remaining else { throw .aboveRemaining(remaining: remaining) }
        remaining -= amount  // 0 < amount ≤ remaining: exact, no overflow
        captures.append(Capture(payInId: payInId, amount: amount))
        guard paymentStatus == .waiting else {
            return .transitioned([.persist, .creditCapture(payInId: payInId, amount: amount)])
        }
        if beforeComplement {
            paymentStatus = .toBeCompleted
            return .transitioned([.persist, .creditCapture(payInId: payInId, amount: amount), .stopExpiry])
        }
        paymentStatus = .validated
        multiCapture = kind == .preauthorization && multi
        return .transitioned([
            .persist, .creditCapture(payInId: payInId, amount: amount), .stopExpiry, .emit(eventType(.validated)),
        ])
    }

    /// The complement of a deposit captured in full: `amount` charged beyond the hold (`remaining` stays 0), once.
    private mutating func complement(payInId: String, amount: Int64) throws(Refusal) -> Outcome {
        guard paymentStatus == .toBeCompleted else { throw .notWaiting(paymentStatus) }
        guard amount > 0 else { throw .amountNotPositive }
        complement = Capture(payInId: payInId, amount: amount)
        paymentStatus = .validated
        return .transitioned([
            .persist, .creditCapture(payInId: payInId, amount: amount), .emit(eventType(.validated)),
        ])
    }

    /// The event that reports reaching `status`.
    func eventType(_ status: PaymentStatus) -> EventType {
        switch (kind, status) {
        case (.preauthorization, .waiting): .preauthorizationPaymentWaiting
        case (.preauthorization, .validated): .preauthorizationPaymentValidated
        case (.preauthorization, .canceled): .preauthorizationPaymentCanceled
        case (.preauthorization, .expired): .preauthorizationPaymentExpired
        case (.deposit, .waiting): .depositPreauthorizationPaymentWaiting
        case (.deposit, .validated): .depositPreauthorizationPaymentValidated
        case (.deposit, .canceled): .depositPreauthorizationPaymentCanceled
        case (.deposit, .expired): .depositPreauthorizationPaymentExpired
        // Never emitted: a deposit waiting for its complement has moved its funds but is not validated yet.
        case (_, .toBeCompleted): .depositPreauthorizationPaymentValidated
        }
    }
}

/// Where a capture pay-in's funds were held.
public struct CaptureSource: Sendable, Equatable, Codable {
    public var kind: PreauthorizationStateMachine.Kind
    /// The preauthorization's or deposit's id.
    public var id: String

    public init(kind: PreauthorizationStateMachine.Kind, id: String) {
        self.kind = kind
        self.id = id
    }
}
