import Foundation
import Testing
import VaultCore
import VaultStore

@testable import Payments

/// A pay-in fixture with the preauthorization service over the same pay-in service.
struct PreauthorizationFixture {
    let payIn: PayInFixture
    let holds: PreauthorizationService

    init() async throws {
        payIn = try await PayInFixture()
        holds = PreauthorizationService(payIns: payIn.payIns)
    }

    var store: InMemoryRecordStore { payIn.base.store }
    var clock: ManualClock { payIn.base.clock }

    func create(
        _ card: Card, amount: Int64, kind: PreauthorizationStateMachine.Kind = .preauthorization
    ) async throws -> PayIn {
        var request = payIn.request(card: card, amount: amount)
        request.creditedWalletId = nil
        request.fees = nil
        return try await holds.create(clientId: "shop", request: request, kind: kind)
    }

    func capture(
        _ hold: PayIn, amount: Int64?, fees: Int64 = 0, multi: Bool = false,
        kind: PreauthorizationStateMachine.Kind = .preauthorization
    ) async throws -> PayIn {
        var request = CaptureRequest()
        request.authorId = payIn.payer.id
        request.creditedWalletId = payIn.wallet.id
        request.holdId = hold.id
        request.debitedFunds = amount.map { Funds(currency: "EUR", amount: $0) }
        request.fees = Funds(currency: "EUR", amount: fees)
        return try await holds.capture(clientId: "shop", request: request, kind: kind, multiCapture: multi)
    }

    /// The event types recorded for `resourceId`, sorted by name (events of one instant have no order: the
    /// manual clock stands still), the outbox checked (``PaymentEventsTests/expectQueuedAsHooked(_:sourceLocation:)``).
    func events(_ resourceId: String) async throws -> [EventType] {
        try await PaymentEventsTests.expectQueuedAsHooked(store)
        return try await store.scanAll(Collections.events)
            .map { try RecordCoding.decode(PaymentEvent.self, from: $0) }
            .filter { $0.resourceId == resourceId }
            .map(\.eventType)
            .sorted { $0.rawValue < $1.rawValue }
    }

    /// `types` sorted as ``events(_:)`` sorts them.
    static func sorted(_ types: [EventType]) -> [EventType] { types.sorted { $0.rawValue < $1.rawValue } }
}

@Suite struct PreauthorizationServiceTests {
    @Test func aPreauthorizationHoldsFundsWithoutCreditingAndACaptureCreditsTheWallet() async throws {
        let f = try await PreauthorizationFixture()
        let (card, _) = try await f.payIn.card()
        let held = try await f.create(card, amount: 3000)
        #expect(held.status == "SUCCEEDED" && held.hold?.paymentStatus == .waiting && held.hold?.remaining == 3000)
        #expect(held.id.hasPrefix("preauth_"))
        #expect(try await f.payIn.balance() == 0)
        #expect(
            try await f.events(held.id)
                == PreauthorizationFixture.sorted([
                    .preauthorizationCreated, .preauthorizationSucceeded, .preauthorizationPaymentWaiting,
                ]))
        #expect(try await f.store.scanAll(Collections.holdsExpiring).count == 1)

        let captured = try await f.capture(held, amount: 1200, fees: 200)
        #expect(
            captured.status == "SUCCEEDED"
                && captured.capturedFrom == CaptureSource(kind: .preauthorization, id: held.id))
        #expect(try await f.payIn.balance() == 1000)
        let after = try await f.holds.get(clientId: "shop", id: held.id, kind: .preauthorization)
        #expect(after.hold?.paymentStatus == .validated && after.hold?.remaining == 1800)
        #expect(after.hold?.captures == [PreauthorizationStateMachine.Capture(payInId: captured.id, amount: 1200)])
        #expect(
            try await f.events(captured.id)
                == PreauthorizationFixture.sorted([.payInNormalCreated, .payInNormalSucceeded]))
        #expect(
            try await f.events(held.id)
                == PreauthorizationFixture.sorted([
                    .preauthorizationCreated, .preauthorizationSucceeded, .preauthorizationPaymentWaiting,
                    .preauthorizationPaymentValidated,
                ]))
        #expect(try await f.store.scanAll(Collections.holdsExpiring).isEmpty)

        // A single capture is the only one; the capture refunds like any pay-in.
        let again = await PaymentsError.from { try await f.capture(held, amount: 100) }
        #expect(again?.fieldErrors["PreauthorizationId"] != nil)
        _ = try await f.payIn.payIns.refund(clientId: "shop", payInId: captured.id, request: RefundRequest())
        #expect(try await f.payIn.balance() == 0)
        let listed = try await f.holds.transactions(
            clientId: "shop", id: held.id, kind: .preauthorization, page: PageRequest())
        #expect(listed.items.map(\.id) == [captured.id])
        // The card's pay-ins list the capture, not the preauthorization.
        let cardPayIns = try await f.payIn.payIns.transactions(clientId: "shop", cardId: card.id, page: PageRequest())
        #expect(cardPayIns.items.map(\.id) == [captured.id])
    }

    @Test func multiCaptureTakesAtMostTheRemainingFunds() async throws {
        let f = try await PreauthorizationFixture()
        let (card, _) = try await f.payIn.card()
        let held = try await f.create(card, amount: 1000)
        _ = try await f.capture(held, amount: 400, multi: true)
        let above = await PaymentsError.from { try await f.capture(held, amount: 601, multi: true) }
        #expect(above?.fieldErrors["DebitedFunds.Amount"] != nil)
        let noKey = await PaymentsError.from { try await f.capture(held, amount: 100) }
        #expect(noKey?.fieldErrors["Idempotency-Key"] != nil)
        _ = try await f.capture(held, amount: 600, multi: true)
        let empty = await PaymentsError.from { try await f.capture(held, amount: 1, multi: true) }
        #expect(empty?.fieldErrors["DebitedFunds.Amount"] != nil)
        let after = try await f.holds.get(clientId: "shop", id: held.id, kind: .preauthorization)
        #expect(after.hold?.remaining == 0 && after.hold?.multiCapture == true)
        #expect(try await f.payIn.balance() == 1000)
    }

    @Test func concurrentCapturesNeverTakeMoreThanTheAuthorization() async throws {
        let f = try await PreauthorizationFixture()
        let (card, _) = try await f.payIn.card()
        let held = try await f.create(card, amount: 1000)
        _ = try await f.capture(held, amount: 100, multi: true)
        let made = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<12 {
                group.addTask { (try? await f.capture(held, amount: 200, multi: true)) != nil }
            }
            var count = 0
            for await ok in group where ok { count += 1 }
            return count
        }
        let after = try await f.holds.get(clientId: "shop", id: held.id, kind: .preauthorization)
        #expect(made <= 4)
        #expect(after.hold?.remaining == 900 - Int64(made) * 200)
        #expect(try await f.payIn.balance() == 100 + Int64(made) * 200)
    }

    @Test func cancelingEndsTheHoldAndIsIdempotent() async throws {
        let f = try await PreauthorizationFixture()
        let (card, _) = try await f.payIn.card()
        let held = try await f.create(card, amount: 500)
        let canceled = try await f.holds.cancel(clientId: "shop", id: held.id, kind: .preauthorization)
        #expect(canceled.hold?.paymentStatus == .canceled)
        let twice = try await f.holds.cancel(clientId: "shop", id: held.id, kind: .preauthorization)
        #expect(twice == canceled)
        #expect(try await f.events(held.id).filter { $0 == .preauthorizationPaymentCanceled }.count == 1)
        let refused = await PaymentsError.from { try await f.capture(held, amount: 500) }
        #expect(refused?.code == .invalidParameters)
        #expect(try await f.payIn.balance() == 0)
        #expect(try await f.store.scanAll(Collections.holdsExpiring).isEmpty)
    }

    @Test func holdsExpireOnReadAndBySweepAfterSevenAndThirtyDays() async throws {
        let f = try await PreauthorizationFixture()
        let (card, _) = try await f.payIn.card()
        let read = try await f.create(card, amount: 500)
        let swept = try await f.create(card, amount: 600)
        let deposit = try await f.create(card, amount: 700, kind: .deposit)
        f.clock.advance(by: 7 * 86_400 - 1)
        #expect(try await f.holds.expireDueHolds() == 0)
        f.clock.advance(by: 1)
        let expired = try await f.holds.get(clientId: "shop", id: read.id, kind: .preauthorization)
        #expect(expired.hold?.paymentStatus == .expired && expired.hold?.remaining == 500)
        #expect(try await f.holds.expireDueHolds() == 1)  // `swept`; `read` is already expired
        let sweptNow = try await f.payIn.payIns.read(clientId: "shop", id: swept.id, purpose: .preauthorization)
        #expect(sweptNow?.value.hold?.paymentStatus == .expired)
        #expect(
            try await f.events(swept.id)
                == PreauthorizationFixture.sorted([
                    .preauthorizationCreated, .preauthorizationSucceeded, .preauthorizationPaymentWaiting,
                    .preauthorizationPaymentExpired,
                ]))
        let late = await PaymentsError.from { try await f.capture(swept, amount: 600) }
        #expect(late?.code == .invalidParameters)
        // The deposit lasts 30 days.
        #expect(try await f.holds.get(clientId: "shop", id: deposit.id, kind: .deposit).hold?.paymentStatus == .waiting)
        f.clock.advance(by: 23 * 86_400)
        #expect(try await f.holds.expireDueHolds() == 1)
        #expect(
            try await f.events(deposit.id)
                == PreauthorizationFixture.sorted([
                    .depositPreauthorizationCreated, .depositPreauthorizationPaymentWaiting,
                    .depositPreauthorizationPaymentExpired,
                ]))
        #expect(try await f.store.scanAll(Collections.holdsExpiring).isEmpty)
    }

    @Test func aDepositIsCapturedInFullOnce() async throws {
        let f = try await PreauthorizationFixture()
        let (card, _) = try await f.payIn.card()
        let deposit = try await f.create(card, amount: 2500, kind: .deposit)
        #expect(deposit.id.hasPrefix("deposit_"))
        #expect(
            try await f.events(deposit.id)
                == PreauthorizationFixture.sorted([
                    .depositPreauthorizationCreated, .depositPreauthorizationPaymentWaiting,
                ]))
        let partial = await PaymentsError.from { try await f.capture(deposit, amount: 2000, kind: .deposit) }
        #expect(partial?.fieldErrors["DebitedFunds.Amount"] != nil)
        let captured = try await f.capture(deposit, amount: nil, fees: 500, kind: .deposit)
        #expect(captured.debitedFunds.amount == 2500 && captured.capturedFrom?.kind == .deposit)
        #expect(try await f.payIn.balance() == 2000)
        let again = await PaymentsError.from { try await f.capture(deposit, amount: nil, kind: .deposit) }
        #expect(again?.code == .invalidParameters)
        let after = try await f.holds.get(clientId: "shop", id: deposit.id, kind: .deposit)
        #expect(after.hold?.paymentStatus == .validated && after.hold?.captures.map(\.payInId) == [captured.id])
    }

    @Test func listsPerCardAndPerUserHoldOnlyTheirKind() async throws {
        let f = try await PreauthorizationFixture()
        let (first, _) = try await f.payIn.card()
        let (second, _) = try await f.payIn.card(PaymentsFixture.mastercard)
        let a = try await f.create(first, amount: 100)
        let b = try await f.create(second, amount: 200)
        let d = try await f.create(first, amount: 300, kind: .deposit)
        _ = try await f.payIn.payIns.create(clientId: "shop", request: f.payIn.request(card: first))
        let onFirst = try await f.holds.list(
            clientId: "shop", cardId: first.id, kind: .preauthorization, page: PageRequest())
        #expect(onFirst.items.map(\.id) == [a.id])
        let ofUser = try await f.holds.list(
            clientId: "shop", userId: f.payIn.payer.id, kind: .preauthorization, page: PageRequest())
        #expect(Set(ofUser.items.map(\.id)) == [a.id, b.id] && ofUser.totalItems == 2)
        let deposits = try await f.holds.list(
            clientId: "shop", userId: f.payIn.payer.id, kind: .deposit, page: PageRequest())
        #expect(deposits.items.map(\.id) == [d.id])
        let wrongKind = await PaymentsError.from { try await f.holds.get(clientId: "shop", id: a.id, kind: .deposit) }
        #expect(wrongKind?.code == .notFound)
        let otherClient = await PaymentsError.from {
            try await f.holds.get(clientId: "other", id: a.id, kind: .preauthorization)
        }
        #expect(otherClient?.code == .notFound)
    }

    @Test func aChallengedPreauthorizationHoldsOnlyOnceTheShopperPassed() async throws {
        let f = try await PreauthorizationFixture()
        let (card, _) = try await f.payIn.card(PayInFixture.challenged)
        let held = try await f.create(card, amount: 900)
        #expect(held.status == "CREATED" && held.secureModeNeeded)
        let url = try #require(f.payIn.payIns.challengeURL(for: held))
        #expect(url.contains("/acs/a/shop/\(held.id)?s="))
        let early = await PaymentsError.from { try await f.capture(held, amount: 900) }
        #expect(early?.fieldErrors["PreauthorizationId"] != nil)
        let (done, returnURL) = try await f.payIn.payIns.answerChallenge(
            kind: "a", clientId: "shop", id: held.id, secret: PayInFixture.secret(url), code: "123456")
        #expect(done.status == "SUCCEEDED" && done.hold?.paymentStatus == .waiting)
        #expect(returnURL.contains("transactionId=" + held.id))
        #expect(
            try await f.events(held.id)
                == PreauthorizationFixture.sorted([
                    .preauthorizationCreated, .preauthorizationSucceeded, .preauthorizationPaymentWaiting,
                ]))
        _ = try await f.capture(held, amount: 900)
        #expect(try await f.payIn.balance() == 900)
    }

    @Test func holdsAndCapturesSurviveTheBinaryRecordFormat() async throws {
        let f = try await PreauthorizationFixture()
        let (card, _) = try await f.payIn.card()
        let held = try await f.create(card, amount: 3000)
        let capture = try await f.capture(held, amount: 1000, multi: true)
        let stored = try #require(
            try await f.store.get(Collections.preauthorizations, id: Identifier.scoped("shop", held.id)))
        #expect(RecordCoding.isBinary(stored.value))
        let decoded = try RecordCoding.decode(PayIn.self, from: stored)
        #expect(decoded.hold?.captures.map(\.payInId) == [capture.id])
        #expect(decoded.hold?.remaining == 2000 && decoded.hold?.multiCapture == true)
        #expect(decoded.machine.purpose == .preauthorization && decoded == held.withHold(decoded.hold))
        let storedCapture = try #require(
            try await f.store.get(Collections.payIns, id: Identifier.scoped("shop", capture.id)))
        #expect(RecordCoding.isBinary(storedCapture.value))
        #expect(
            try RecordCoding.decode(PayIn.self, from: storedCapture).capturedFrom
                == CaptureSource(kind: .preauthorization, id: held.id))
    }

    /// Randomised runs of preauthorize, capture, cancel, expire and refund: the wallet holds exactly the succeeded
    /// captures minus the refunds, and no hold ever gives more than it authorized.
    @Test(arguments: 0..<4) func moneyIsConservedOverRandomisedRuns(seed: Int) async throws {
        let f = try await PreauthorizationFixture()
        let (card, _) = try await f.payIn.card()
        var generator = SystemRandomNumberGenerator()
        var holds: [(id: String, kind: PreauthorizationStateMachine.Kind)] = []
        var captures: [String] = []
        var expected: Int64 = 0
        for _ in 0..<60 {
            switch Int.random(in: 0..<10, using: &generator) {
            case 0...2:
                let kind: PreauthorizationStateMachine.Kind =
                    Bool.random(using: &generator) ? .preauthorization : .deposit
                let held = try await f.create(card, amount: Int64.random(in: 1...5000, using: &generator), kind: kind)
                holds.append((held.id, kind))
            case 3...5 where !holds.isEmpty:
                let pick = holds.randomElement(using: &generator)!
                let held = try await f.holds.get(clientId: "shop", id: pick.id, kind: pick.kind)
                let remaining = held.hold?.remaining ?? 0
                // Sometimes above what is left, to see it refused.
                let amount = Int64.random(in: 1...max(1, remaining + 50), using: &generator)
                let fees = Int64.random(in: 0...amount, using: &generator)
                do {
                    let made = try await f.capture(
                        held, amount: pick.kind == .deposit ? nil : amount, fees: pick.kind == .deposit ? 0 : fees,
                        multi: Bool.random(using: &generator), kind: pick.kind)
                    let credited = made.creditedFunds.amount
                    expected += credited
                    captures.append(made.id)
                } catch let error as PaymentsError where error.code == .invalidParameters {
                    continue
                }
            case 6 where !holds.isEmpty:
                let pick = holds.randomElement(using: &generator)!
                _ = try? await f.holds.cancel(clientId: "shop", id: pick.id, kind: pick.kind)
            case 7:
                f.clock.advance(by: TimeInterval(Int.random(in: 0...(3 * 86_400), using: &generator)))
                try await f.holds.expireDueHolds()
            case 8...9 where !captures.isEmpty:
                let target = captures.randomElement(using: &generator)!
                let current = try await f.payIn.payIns.get(clientId: "shop", id: target)
                let left = current.creditedFunds.amount - current.refunded
                guard left > 0 else { continue }
                let amount = Int64.random(in: 1...left, using: &generator)
                let refund = try await f.payIn.payIns.refund(
                    clientId: "shop", payInId: target,
                    request: RefundRequest(debitedFunds: Funds(currency: "EUR", amount: amount)))
                if refund.status == "SUCCEEDED" { expected -= amount }
            default:
                continue
            }
        }
        #expect(try await f.payIn.balance() == expected)
        for pick in holds {
            let held = try await f.holds.get(clientId: "shop", id: pick.id, kind: pick.kind)
            let hold = try #require(held.hold)
            var captured: Int64 = 0
            for capture in hold.captures {
                let payIn = try await f.payIn.payIns.get(clientId: "shop", id: capture.payInId)
                #expect(payIn.debitedFunds.amount == capture.amount && payIn.status == "SUCCEEDED")
                captured += payIn.debitedFunds.amount
            }
            #expect(captured <= held.debitedFunds.amount, "no hold gives more than it authorized")
            #expect(hold.remaining == held.debitedFunds.amount - captured)
        }
        _ = seed
    }
}

extension PayIn {
    /// This transaction with another hold (what a capture changes).
    fileprivate func withHold(_ hold: PreauthorizationStateMachine?) -> PayIn {
        var copy = self
        copy.hold = hold
        return copy
    }
}
