import Foundation
import Testing
import VaultCore
import VaultStore

@testable import Payments

/// PayPal pay-ins on the in-memory store: the line items' sum rule, the approval step of the pay-in state machine
/// (approve, cancel, expiry on the manual clock), the sandbox's refused amount, and recurring CIT then MIT.
@Suite struct PayPalPayInTests {
    static func item(_ unit: Int64, quantity: Int64 = 1, tax: Int64 = 0) -> PayPalLineItem {
        PayPalLineItem(name: "Shoes", quantity: quantity, unitAmount: unit, taxAmount: tax, category: "PHYSICAL_GOODS")
    }

    func request(_ f: PayInFixture, amount: Int64 = 1000, items: [PayPalLineItem]? = nil) -> PayPalPayInRequest {
        var request = PayPalPayInRequest()
        request.authorId = f.payer.id
        request.creditedWalletId = f.wallet.id
        request.debitedFunds = Funds(currency: "EUR", amount: amount)
        request.fees = Funds(currency: "EUR", amount: 100)
        request.returnURL = "https://shop.example/paid?order=7"
        request.cancelURL = "https://shop.example/cancelled"
        request.lineItems = items ?? [Self.item(400, quantity: 2, tax: 100), Self.item(amount - 900)]
        return request
    }

    func events(_ f: PayInFixture, _ id: String) async throws -> [EventType] {
        try await f.base.store.scanAll(Collections.events).map { try RecordCoding.decode(PaymentEvent.self, from: $0) }
            .filter { $0.resourceId == id }.map(\.eventType)
    }

    @Test func lineItemsSumWithCheckedArithmetic() {
        #expect(PayPalLineItem.total([Self.item(400, quantity: 2, tax: 100), Self.item(400, tax: 100)]) == 1400)
        #expect(PayPalLineItem.total([]) == 0)
        #expect(PayPalLineItem.total([Self.item(Int64.max / 2 + 1, quantity: 2)]) == nil)
        #expect(PayPalLineItem.total([Self.item(Int64.max - 1, tax: 2)]) == nil)
        #expect(PayPalLineItem.total([Self.item(Int64.max), Self.item(1)]) == nil)
    }

    @Test func lineItemsThatDoNotSumOrOverflowAreRefusedNamingTheField() async throws {
        let f = try await PayInFixture()
        let short = await PaymentsError.from {
            try await f.payIns.createPayPalPayIn(
                clientId: "shop", request: request(f, amount: 1000, items: [Self.item(400, quantity: 2)]))
        }
        #expect(short?.code == .invalidParameters)
        #expect(short?.fieldErrors["LineItems"]?.contains("(800) must equal DebitedFunds.Amount (1000)") == true)
        // Each amount is in range, their product is not: refused, never wrapped.
        let huge = await PaymentsError.from {
            try await f.payIns.createPayPalPayIn(
                clientId: "shop",
                request: request(f, items: [Self.item(Funds.maximumAmount, quantity: Int64.max / 1000)]))
        }
        #expect(huge?.fieldErrors["LineItems"]?.contains("out of range") == true)
        let empty = await PaymentsError.from {
            try await f.payIns.createPayPalPayIn(clientId: "shop", request: request(f, items: []))
        }
        #expect(empty?.fieldErrors["LineItems"] != nil)
        #expect(try await f.balance() == 0)
    }

    @Test func approvedPayInCreditsTheWalletAndReturnsToReturnURL() async throws {
        let f = try await PayInFixture()
        let created = try await f.payIns.createPayPalPayIn(clientId: "shop", request: request(f, amount: 1400))
        #expect(created.status == "CREATED" && created.payInKind == .payPal)
        #expect(created.machine.redirect == .payPalApproval)
        #expect(try await f.payIns.get(clientId: "shop", id: created.id) == created)  // the stored record round trips
        let url = try #require(f.payIns.challengeURL(for: created))
        #expect(url.hasPrefix("https://vault.example/paypal/checkout/shop/\(created.id)?s="))
        let secret = PayInFixture.secret(url)
        // The 3-D Secure page does not open a PayPal pay-in.
        #expect(
            await PaymentsError.from {
                try await f.payIns.challenge(kind: "p", clientId: "shop", id: created.id, secret: secret)
            }?.code == .notFound)
        #expect(
            await PaymentsError.from {
                try await f.payIns.payPalApproval(clientId: "shop", id: created.id, secret: "wrong")
            }?.code == .notFound)

        let (done, target) = try await f.payIns.answerPayPalApproval(
            clientId: "shop", id: created.id, secret: secret, approved: true)
        #expect(done.status == "SUCCEEDED" && done.result == .success)
        #expect(target == "https://shop.example/paid?order=7&transactionId=\(created.id)")
        #expect(try await f.balance() == 1300)
        // A second answer changes nothing.
        let (again, _) = try await f.payIns.answerPayPalApproval(
            clientId: "shop", id: created.id, secret: secret, approved: false)
        #expect(again.status == "SUCCEEDED")
        #expect(try await f.balance() == 1300)
        #expect(try await events(f, created.id) == [.payInNormalCreated, .payInNormalSucceeded])
        let refund = try await f.payIns.refund(clientId: "shop", payInId: created.id, request: RefundRequest())
        #expect(refund.status == "SUCCEEDED" && refund.debitedFunds.amount == 1300)
    }

    @Test func cancelledPayInFailsAndReturnsToCancelURL() async throws {
        let f = try await PayInFixture()
        let created = try await f.payIns.createPayPalPayIn(clientId: "shop", request: request(f))
        let secret = PayInFixture.secret(try #require(f.payIns.challengeURL(for: created)))
        let (done, target) = try await f.payIns.answerPayPalApproval(
            clientId: "shop", id: created.id, secret: secret, approved: false)
        #expect(done.status == "FAILED" && done.result == .payPalCancelled)
        #expect(target == "https://shop.example/cancelled?transactionId=\(created.id)")
        #expect(try await f.balance() == 0)
        #expect(try await events(f, created.id) == [.payInNormalCreated, .payInNormalFailed])
    }

    @Test func unansweredApprovalExpiresOnTheInjectedClock() async throws {
        let f = try await PayInFixture()
        let created = try await f.payIns.createPayPalPayIn(clientId: "shop", request: request(f))
        let other = try await f.payIns.createPayPalPayIn(clientId: "shop", request: request(f))
        f.base.clock.advance(by: TimeInterval(f.payIns.sandbox.challengeWindowSeconds - 1))
        #expect(try await f.payIns.expireDueChallenges() == 0)
        #expect(try await f.payIns.get(clientId: "shop", id: created.id).status == "CREATED")
        f.base.clock.advance(by: 1)
        #expect(try await f.payIns.expireDueChallenges() == 2)
        let expired = try await f.payIns.get(clientId: "shop", id: created.id)
        #expect(expired.status == "FAILED" && expired.result == .payPalExpired)
        // Approving after the deadline cannot succeed.
        let secret = PayInFixture.secret(try #require(f.payIns.challengeURL(for: other)))
        let (late, target) = try await f.payIns.answerPayPalApproval(
            clientId: "shop", id: other.id, secret: secret, approved: true)
        #expect(late.status == "FAILED" && target.hasPrefix("https://shop.example/cancelled"))
        #expect(try await f.balance() == 0)
    }

    @Test func sandboxRefusesAmountsEndingIn13() async throws {
        let f = try await PayInFixture()
        let refused = try await f.payIns.createPayPalPayIn(clientId: "shop", request: request(f, amount: 1013))
        #expect(refused.status == "FAILED" && refused.result?.code == "101199")
        #expect(f.payIns.challengeURL(for: refused) == nil)
    }

    @Test func approvalStepHasItsOwnResults() throws {
        let start = Date(timeIntervalSince1970: 1_000)
        let deadline = start.addingTimeInterval(600)
        func machine() throws -> PayInStateMachine {
            var machine = PayInStateMachine(purpose: .payIn, redirect: .payPalApproval)
            _ = try machine.handle(.authorize(.challenge(expiresAt: deadline)))
            return machine
        }
        var cancelled = try machine()
        #expect(try cancelled.handle(.challengeCancelled(at: start)) != .unchanged)
        #expect(cancelled.state == .failed(.payPalCancelled))
        var late = try machine()
        _ = try late.handle(.challengeCompleted(passed: true, at: deadline))
        #expect(late.state == .failed(.payPalExpired))
        var expired = try machine()
        #expect(try expired.handle(.expire(now: start)) == .unchanged)
        _ = try expired.handle(.expire(now: deadline))
        #expect(expired.state == .failed(.payPalExpired))
        var approved = try machine()
        guard case .transitioned(let actions) = try approved.handle(.challengeCompleted(passed: true, at: start)) else {
            Issue.record("no transition")
            return
        }
        #expect(approved.state == .succeeded && actions.contains(.creditWallet))
        #expect(try approved.handle(.challengeCancelled(at: start)) == .alreadyFinal)
    }

    @Test func recurringRegistrationNeedsNoCardAndItsCITThenMITSucceed() async throws {
        let f = try await PayInFixture()
        var registrationRequest = RecurringRegistrationRequest()
        registrationRequest.authorId = f.payer.id
        registrationRequest.creditedWalletId = f.wallet.id
        registrationRequest.paymentType = "PAYPAL"
        registrationRequest.firstTransactionDebitedFunds = Funds(currency: "EUR", amount: 1000)
        registrationRequest.firstTransactionFees = Funds(currency: "EUR", amount: 0)
        registrationRequest.nextTransactionDebitedFunds = Funds(currency: "EUR", amount: 500)
        registrationRequest.nextTransactionFees = Funds(currency: "EUR", amount: 0)
        let registration = try await f.payIns.createRecurringRegistration(
            clientId: "shop", request: registrationRequest)
        #expect(registration.paymentType == "PAYPAL" && registration.cardId.isEmpty)

        var cit = request(f, items: [Self.item(1000)])
        cit.debitedFunds = nil
        cit.fees = nil
        cit.recurringPayinRegistrationId = registration.id
        let pending = try await f.payIns.createRecurringPayPalPayIn(clientId: "shop", request: cit)
        #expect(pending.status == "CREATED" && pending.payInKind == .payPalRecurringCustomerInitiated)
        #expect(
            try await f.payIns.recurringRegistration(clientId: "shop", id: registration.id).status
                == "AUTHENTICATION_NEEDED")
        let secret = PayInFixture.secret(try #require(f.payIns.challengeURL(for: pending)))
        _ = try await f.payIns.answerPayPalApproval(clientId: "shop", id: pending.id, secret: secret, approved: true)
        #expect(try await f.payIns.recurringRegistration(clientId: "shop", id: registration.id).status == "IN_PROGRESS")

        var mit = PayPalPayInRequest()
        mit.recurringPayinRegistrationId = registration.id
        mit.lineItems = [Self.item(500)]
        let charged = try await f.payIns.createRecurringPayPalPayIn(clientId: "shop", request: mit)
        #expect(charged.status == "SUCCEEDED" && charged.payInKind == .payPalRecurringMerchantInitiated)
        #expect(f.payIns.challengeURL(for: charged) == nil)
        #expect(try await f.balance() == 1500)
        // A card recurring pay-in does not take a PayPal registration.
        #expect(
            await PaymentsError.from {
                try await f.payIns.createRecurringPayIn(
                    clientId: "shop", request: RecurringPayInRequest(recurringPayinRegistrationId: registration.id))
            }?.fieldErrors["RecurringPayinRegistrationId"] != nil)
    }
}
