import Testing

@testable import Payments

/// Every state of a hold against every event, in one table: what each pair does.
@Suite struct PreauthorizationStateMachineTests {
    typealias Machine = PreauthorizationStateMachine

    static let start: Int64 = 1_000_000
    static let early = start + 10

    /// The states, each reached from a new hold through events (a preauthorization of 3000, a deposit of 1000).
    static func states() throws -> [(String, Machine)] {
        func made(_ kind: Machine.Kind, _ events: [Machine.Event]) throws -> Machine {
            var machine = Machine(kind: kind, authorized: kind == .preauthorization ? 3000 : 1000, now: start)
            for event in events { _ = try machine.handle(event) }
            return machine
        }
        func capture(_ amount: Int64, multi: Bool) -> Machine.Event {
            .capture(payInId: "payin_setup\(amount)", amount: amount, multiCapture: multi, authorized: true, now: early)
        }
        let late = start + Machine.lifetime(.preauthorization)
        let depositLate = start + Machine.lifetime(.deposit)
        return [
            ("waiting", try made(.preauthorization, [])),
            ("validated-single", try made(.preauthorization, [capture(1000, multi: false)])),
            ("validated-multi", try made(.preauthorization, [capture(1000, multi: true)])),
            (
                "validated-multi-empty",
                try made(.preauthorization, [capture(1000, multi: true), capture(2000, multi: true)])
            ),
            ("canceled", try made(.preauthorization, [.cancel(now: early)])),
            ("expired", try made(.preauthorization, [.expire(now: late)])),
            ("deposit-waiting", try made(.deposit, [])),
            ("deposit-validated", try made(.deposit, [capture(1000, multi: false)])),
            ("deposit-canceled", try made(.deposit, [.cancel(now: early)])),
            ("deposit-expired", try made(.deposit, [.expire(now: depositLate)])),
        ]
    }

    /// The events, in the column order of ``expected``; amounts relative to what the state has left.
    static var events: [(String, (Machine) -> Machine.Event)] {
        [
            (
                "capture-multi",
                { _ in .capture(payInId: "payin_x", amount: 1000, multiCapture: true, authorized: true, now: early) }
            ),
            (
                "capture-single",
                { _ in .capture(payInId: "payin_x", amount: 1000, multiCapture: false, authorized: true, now: early) }
            ),
            (
                "capture-above",
                { m in
                    .capture(
                        payInId: "payin_x", amount: m.remaining + 1, multiCapture: true, authorized: true, now: early)
                }
            ),
            (
                "capture-zero",
                { _ in .capture(payInId: "payin_x", amount: 0, multiCapture: true, authorized: true, now: early) }
            ),
            (
                "capture-unauthorized",
                { _ in .capture(payInId: "payin_x", amount: 1000, multiCapture: true, authorized: false, now: early) }
            ),
            (
                "capture-late",
                { m in
                    .capture(payInId: "payin_x", amount: 1000, multiCapture: true, authorized: true, now: m.expiresAt)
                }
            ),
            ("cancel", { _ in .cancel(now: early) }),
            ("cancel-late", { m in .cancel(now: m.expiresAt) }),
            ("expire-early", { m in .expire(now: m.expiresAt - 1) }),
            ("expire-late", { m in .expire(now: m.expiresAt) }),
        ]
    }

    static let validatedP = "VALIDATED 2000: persist credit(1000) stop PREAUTHORIZATION_PAYMENT_VALIDATED"
    static let notValidated = "refused notWaiting(VALIDATED)"
    static let notCanceled = "refused notWaiting(CANCELED)"
    static let notExpired = "refused notWaiting(EXPIRED)"

    /// Row per state, column per event (the order of ``events``).
    static let expected: [String: [String]] = [
        "waiting": [
            "VALIDATED 2000 multi: persist credit(1000) stop PREAUTHORIZATION_PAYMENT_VALIDATED", validatedP,
            "refused aboveRemaining(3000)", "refused amountNotPositive", "refused notAuthorized", "refused expired",
            "CANCELED 3000: persist stop PREAUTHORIZATION_PAYMENT_CANCELED", "refused expired", "unchanged",
            "EXPIRED 3000: persist stop PREAUTHORIZATION_PAYMENT_EXPIRED",
        ],
        "validated-single": Array(repeating: notValidated, count: 8) + ["unchanged", "unchanged"],
        "validated-multi": [
            "VALIDATED 1000 multi: persist credit(1000)", "refused multiCaptureNeedsIdempotencyKey",
            "refused aboveRemaining(2000)", "refused amountNotPositive", "refused notAuthorized", "refused expired",
            notValidated, notValidated, "unchanged", "unchanged",
        ],
        "validated-multi-empty": [
            "refused aboveRemaining(0)", "refused multiCaptureNeedsIdempotencyKey", "refused aboveRemaining(0)",
            "refused amountNotPositive", "refused notAuthorized", "refused expired", notValidated, notValidated,
            "unchanged", "unchanged",
        ],
        "canceled": Array(repeating: notCanceled, count: 6) + ["unchanged", "unchanged", "unchanged", "unchanged"],
        "expired": Array(repeating: notExpired, count: 8) + ["unchanged", "unchanged"],
        "deposit-waiting": [
            "VALIDATED 0: persist credit(1000) stop DEPOSIT_PREAUTHORIZATION_PAYMENT_VALIDATED",
            "VALIDATED 0: persist credit(1000) stop DEPOSIT_PREAUTHORIZATION_PAYMENT_VALIDATED",
            "refused fullCaptureRequired(1000)", "refused amountNotPositive", "refused notAuthorized",
            "refused expired", "CANCELED 1000: persist stop DEPOSIT_PREAUTHORIZATION_PAYMENT_CANCELED",
            "refused expired", "unchanged", "EXPIRED 1000: persist stop DEPOSIT_PREAUTHORIZATION_PAYMENT_EXPIRED",
        ],
        "deposit-validated": Array(repeating: notValidated, count: 8) + ["unchanged", "unchanged"],
        "deposit-canceled": Array(repeating: notCanceled, count: 6) + [
            "unchanged", "unchanged", "unchanged", "unchanged",
        ],
        "deposit-expired": Array(repeating: notExpired, count: 8) + ["unchanged", "unchanged"],
    ]

    static func describe(_ machine: Machine, _ result: Result<Machine.Outcome, Machine.Refusal>) -> String {
        switch result {
        case .failure(let refusal):
            switch refusal {
            case .notAuthorized: return "refused notAuthorized"
            case .notWaiting(let status): return "refused notWaiting(\(status.rawValue))"
            case .expired: return "refused expired"
            case .amountNotPositive: return "refused amountNotPositive"
            case .aboveRemaining(let remaining): return "refused aboveRemaining(\(remaining))"
            case .fullCaptureRequired(let amount): return "refused fullCaptureRequired(\(amount))"
            case .multiCaptureNeedsIdempotencyKey: return "refused multiCaptureNeedsIdempotencyKey"
            case .complementOfAPreauthorization: return "refused complementOfAPreauthorization"
            }
        case .success(.unchanged):
            return "unchanged"
        case .success(.transitioned(let actions)):
            let words = actions.map { action -> String in
                switch action {
                case .persist: "persist"
                case .creditCapture(_, let amount): "credit(\(amount))"
                case .stopExpiry: "stop"
                case .emit(let type): type.rawValue
                }
            }
            return "\(machine.paymentStatus.rawValue) \(machine.remaining)\(machine.multiCapture ? " multi" : ""): "
                + words.joined(separator: " ")
        }
    }

    @Test func everyStateAndEventPairDoesWhatTheTableSays() throws {
        let states = try Self.states()
        #expect(Set(states.map(\.0)) == Set(Self.expected.keys))
        var pairs = 0
        for (name, state) in states {
            let row = try #require(Self.expected[name])
            #expect(row.count == Self.events.count, "row \(name)")
            for (column, (eventName, makeEvent)) in Self.events.enumerated() {
                var machine = state
                let result: Result<Machine.Outcome, Machine.Refusal>
                do {
                    result = .success(try machine.handle(makeEvent(state)))
                } catch {
                    result = .failure(error)
                    #expect(machine == state, "a refusal changes nothing: \(name) / \(eventName)")
                }
                if case .success(.unchanged) = result { #expect(machine == state) }
                #expect(Self.describe(machine, result) == row[column], "\(name) / \(eventName)")
                // Conservation: what is left plus what was captured is always the authorization.
                #expect(machine.remaining + machine.captures.reduce(0) { $0 + $1.amount } == machine.authorized)
                #expect(machine.remaining >= 0)
                pairs += 1
            }
        }
        #expect(pairs == 10 * Self.events.count)
    }

    @Test func aDepositIsCapturedInFullThenComplementedOnceBeyondTheHold() throws {
        func capture(_ amount: Int64, _ step: Machine.CaptureStep) -> Machine.Event {
            .capture(
                payInId: "payin_\(amount)", amount: amount, multiCapture: false, authorized: true, now: Self.early,
                step: step)
        }
        var deposit = Machine(kind: .deposit, authorized: 1000, now: Self.start)
        #expect(throws: Machine.Refusal.notWaiting(.waiting)) { try deposit.handle(capture(200, .complement)) }
        #expect(throws: Machine.Refusal.fullCaptureRequired(amount: 1000)) {
            try deposit.handle(capture(900, .priorToComplement))
        }
        let prior = try deposit.handle(capture(1000, .priorToComplement))
        #expect(prior == .transitioned([.persist, .creditCapture(payInId: "payin_1000", amount: 1000), .stopExpiry]))
        #expect(deposit.paymentStatus == .toBeCompleted && deposit.remaining == 0)
        #expect(throws: Machine.Refusal.notWaiting(.toBeCompleted)) { try deposit.handle(capture(1000, .capture)) }
        #expect(throws: Machine.Refusal.notWaiting(.toBeCompleted)) { try deposit.handle(.cancel(now: Self.early)) }
        #expect(try deposit.handle(.expire(now: deposit.expiresAt)) == .unchanged)
        #expect(throws: Machine.Refusal.amountNotPositive) { try deposit.handle(capture(0, .complement)) }
        // Beyond the hold: the complement is not bounded by what was authorized, and is no capture of the hold.
        let complement = try deposit.handle(capture(5000, .complement))
        #expect(
            complement
                == .transitioned([
                    .persist, .creditCapture(payInId: "payin_5000", amount: 5000),
                    .emit(.depositPreauthorizationPaymentValidated),
                ]))
        #expect(deposit.paymentStatus == .validated && deposit.complement?.amount == 5000)
        #expect(deposit.remaining + deposit.captures.reduce(0) { $0 + $1.amount } == deposit.authorized)
        #expect(throws: Machine.Refusal.notWaiting(.validated)) { try deposit.handle(capture(100, .complement)) }
        var preauthorization = Machine(kind: .preauthorization, authorized: 1000, now: Self.start)
        #expect(throws: Machine.Refusal.complementOfAPreauthorization) {
            try preauthorization.handle(capture(1000, .priorToComplement))
        }
    }

    @Test func holdsLastSevenAndThirtyDays() {
        #expect(Machine(kind: .preauthorization, authorized: 1, now: 100).expiresAt == 100 + 7 * 86_400)
        #expect(Machine(kind: .deposit, authorized: 1, now: 100).expiresAt == 100 + 30 * 86_400)
        #expect(Machine(kind: .deposit, authorized: 1, now: .max - 5).expiresAt == .max)
    }

    @Test func theLargestAmountsNeverOverflow() throws {
        var machine = Machine(kind: .preauthorization, authorized: Funds.maximumAmount, now: Self.start)
        let event = Machine.Event.capture(
            payInId: "p", amount: .max, multiCapture: true, authorized: true, now: Self.early)
        #expect(throws: Machine.Refusal.aboveRemaining(remaining: Funds.maximumAmount)) { try machine.handle(event) }
        _ = try machine.handle(
            .capture(payInId: "p", amount: Funds.maximumAmount, multiCapture: true, authorized: true, now: Self.early))
        #expect(machine.remaining == 0 && machine.captured == Funds.maximumAmount)
    }
}
