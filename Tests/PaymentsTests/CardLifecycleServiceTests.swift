import CardKit
import Foundation
import Testing
import VaultCore
import VaultStore

@testable import Payments

/// Recurring registrations and their CIT/MIT pay-ins, wallet pay-ins, transaction lists, BIN metadata, user
/// categories and closing, on the in-memory store: money moves exactly, and every change writes its event.
@Suite struct CardLifecycleServiceTests {
    func registrationRequest(
        _ f: PayInFixture, card: Card, first: Int64 = 1200, next: Int64? = 1000
    )
        -> RecurringRegistrationRequest
    {
        var request = RecurringRegistrationRequest()
        request.authorId = f.payer.id
        request.cardId = card.id
        request.creditedWalletId = f.wallet.id
        request.firstTransactionDebitedFunds = Funds(currency: "EUR", amount: first)
        request.firstTransactionFees = Funds(currency: "EUR", amount: 100)
        if let next {
            request.nextTransactionDebitedFunds = Funds(currency: "EUR", amount: next)
            request.nextTransactionFees = Funds(currency: "EUR", amount: 0)
        }
        return request
    }

    func cit(_ registrationId: String, amount: Int64? = nil) -> RecurringPayInRequest {
        var request = RecurringPayInRequest(
            recurringPayinRegistrationId: registrationId,
            debitedFunds: amount.map { Funds(currency: "EUR", amount: $0) },
            fees: amount.map { _ in Funds(currency: "EUR", amount: 0) })
        request.details.secureModeReturnURL = "https://shop.example/return"
        request.details.ipAddress = "192.0.2.7"
        request.details.browserInfo = BrowserInfo(language: "fr-FR", colorDepth: 24, userAgent: "UA/1")
        return request
    }

    func mit(_ registrationId: String, amount: Int64? = nil) -> RecurringPayInRequest {
        RecurringPayInRequest(
            recurringPayinRegistrationId: registrationId,
            debitedFunds: amount.map { Funds(currency: "EUR", amount: $0) },
            fees: amount.map { _ in Funds(currency: "EUR", amount: 0) })
    }

    func events(_ f: PayInFixture) async throws -> [PaymentEvent] {
        try await f.base.store.scanAll(Collections.events).map { try RecordCoding.decode(PaymentEvent.self, from: $0) }
    }

    func count(_ events: [PaymentEvent], _ type: EventType, _ resource: String) -> Int {
        events.filter { $0.eventType == type && $0.resourceId == resource }.count
    }

    @Test func citWithAChallengeThenMITsMoveTheRegistrationAndTheMoney() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card(PayInFixture.challenged)
        let registration = try await f.payIns.createRecurringRegistration(
            clientId: "shop", request: registrationRequest(f, card: card))
        #expect(registration.status == "CREATED")

        let pending = try await f.payIns.createRecurringPayIn(clientId: "shop", request: cit(registration.id))
        #expect(pending.status == "CREATED" && pending.secureModeNeeded)
        #expect(pending.debitedFunds.amount == 1200)  // the first transaction's funds
        #expect(
            try await f.payIns.recurringRegistration(clientId: "shop", id: registration.id).status
                == "AUTHENTICATION_NEEDED")
        // An MIT before the CIT succeeded is refused.
        #expect(
            await PaymentsError.from {
                try await f.payIns.createRecurringPayIn(clientId: "shop", request: mit(registration.id))
            }?.code == .invalidParameters)

        let url = try #require(f.payIns.challengeURL(for: pending))
        let (done, _) = try await f.payIns.answerChallenge(
            kind: "p", clientId: "shop", id: pending.id, secret: PayInFixture.secret(url), code: "123456")
        #expect(done.status == "SUCCEEDED")
        var current = try await f.payIns.recurringRegistration(clientId: "shop", id: registration.id)
        #expect(current.status == "IN_PROGRESS" && current.cumulatedDebitedAmount == 1200)
        #expect(try await f.balance() == 1100)

        // MITs: no challenge although the card's sandbox rule challenges; the next funds by default.
        let first = try await f.payIns.createRecurringPayIn(clientId: "shop", request: mit(registration.id))
        #expect(first.status == "SUCCEEDED" && !first.secureModeNeeded && first.debitedFunds.amount == 1000)
        #expect(first.payInKind == .recurringMerchantInitiated)
        current = try await f.payIns.recurringRegistration(clientId: "shop", id: registration.id)
        #expect(current.machine.payInsLinked == 2 && current.lastPayInId == first.id)
        #expect(current.cumulatedDebitedAmount == 2200 && current.cumulatedFeesAmount == 100)
        #expect(try await f.balance() == 2100)

        // Refunds of each, then the end.
        for payIn in [done, first] {
            let refund = try await f.payIns.refund(clientId: "shop", payInId: payIn.id, request: RefundRequest())
            #expect(refund.status == "SUCCEEDED")
        }
        #expect(try await f.balance() == 0)
        let ended = try await f.payIns.updateRecurringRegistration(
            clientId: "shop", id: registration.id, changes: .init(status: "ENDED"))
        #expect(ended.status == "ENDED")
        #expect(
            await PaymentsError.from {
                try await f.payIns.createRecurringPayIn(clientId: "shop", request: mit(registration.id))
            }?.code == .invalidParameters)
        #expect(
            await PaymentsError.from {
                try await f.payIns.updateRecurringRegistration(
                    clientId: "shop", id: registration.id, changes: .init(status: "IN_PROGRESS"))
            }?.code == .invalidParameters)

        let all = try await events(f)
        for type in [
            EventType.recurringRegistrationCreated, .recurringRegistrationAuthNeeded,
            .recurringRegistrationInProgress, .recurringRegistrationEnded,
        ] {
            #expect(count(all, type, registration.id) == 1, "\(type)")
        }
        #expect(count(all, .payInNormalCreated, done.id) == 1 && count(all, .payInNormalSucceeded, done.id) == 1)
        #expect(count(all, .payInNormalCreated, first.id) == 1 && count(all, .payInNormalSucceeded, first.id) == 1)
        // No hook: no event is queued for delivery.
        try await PaymentEventsTests.expectQueuedAsHooked(f.base.store)
        #expect(try await f.base.store.scanAll(Collections.eventOutbox).isEmpty)
    }

    @Test func theHundredthPayInFailsWith205001AndMoneyIsConserved() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card()
        let registration = try await f.payIns.createRecurringRegistration(
            clientId: "shop", request: registrationRequest(f, card: card, first: 100, next: nil))
        var payIns: [PayIn] = [try await f.payIns.createRecurringPayIn(clientId: "shop", request: cit(registration.id))]
        #expect(payIns[0].status == "SUCCEEDED")
        var generator = SystemRandomNumberGenerator()
        for _ in 1..<RecurringRegistrationStateMachine.maximumPayIns {
            let amount = Int64.random(in: 1...900, using: &generator)
            payIns.append(
                try await f.payIns.createRecurringPayIn(clientId: "shop", request: mit(registration.id, amount: amount))
            )
        }
        let before = try await f.balance()
        let hundredth = try await f.payIns.createRecurringPayIn(
            clientId: "shop", request: mit(registration.id, amount: 50))
        #expect(hundredth.status == "FAILED" && hundredth.result == .dataValidationError)
        #expect(try await f.balance() == before)
        let stored = try await f.payIns.recurringRegistration(clientId: "shop", id: registration.id)
        #expect(stored.machine.payInsLinked == 99 && stored.lastPayInId == payIns.last!.id)
        let succeeded = payIns.filter { $0.status == "SUCCEEDED" }
        #expect(before == succeeded.reduce(0) { $0 + $1.creditedFunds.amount })
        #expect(stored.cumulatedDebitedAmount == succeeded.reduce(0) { $0 + $1.debitedFunds.amount })
    }

    @Test func theSandboxRecurringMockDeclines() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card()
        var request = registrationRequest(f, card: card, first: 100, next: 33501)
        request.billing = PartyAddress(address: Address(addressLine2: "01131"))
        let registration = try await f.payIns.createRecurringRegistration(clientId: "shop", request: request)
        #expect(
            try await f.payIns.createRecurringPayIn(clientId: "shop", request: cit(registration.id)).status
                == "SUCCEEDED")
        let declined = try await f.payIns.createRecurringPayIn(clientId: "shop", request: mit(registration.id))
        #expect(declined.result == .softDecline)
        let after = try await f.payIns.recurringRegistration(clientId: "shop", id: registration.id)
        #expect(after.status == "AUTHENTICATION_NEEDED" && after.result == .softDecline)
        // A new CIT authenticates again.
        #expect(
            try await f.payIns.createRecurringPayIn(clientId: "shop", request: cit(registration.id, amount: 100)).status
                == "SUCCEEDED")
        #expect(try await f.payIns.recurringRegistration(clientId: "shop", id: registration.id).status == "IN_PROGRESS")
    }

    @Test func walletPayInsFollowTheSandboxTableAndNeverKeepTheToken() async throws {
        let base = PaymentsFixture()
        var sandbox = SandboxBehaviour()
        sandbox.cards["APPLEPAY:MASTERCARD"] = .init(flow: .decline, resultCode: "101101")
        let payIns = PayInService(
            environment: base.services.environment, securityCodes: base.services.securityCodes, sandbox: sandbox)
        let payer = try await base.payer()
        let wallet = try await base.services.wallets.create(
            clientId: "shop", owners: [payer.id], description: "w", currency: "EUR", tag: nil)
        func request(
            _ network: String, token: String? = "{\"version\":\"EC_v1\",\"data\":\"c2VjcmV0LXRva2Vu\"}"
        )
            -> WalletPayInRequest
        {
            var request = WalletPayInRequest()
            request.authorId = payer.id
            request.creditedWalletId = wallet.id
            request.debitedFunds = Funds(currency: "EUR", amount: 199)
            request.fees = Funds(currency: "EUR", amount: 1)
            request.paymentData = WalletPaymentData(transactionId: "tx-1", network: network, tokenData: token)
            return request
        }
        let paid = try await payIns.createWalletPayIn(clientId: "shop", kind: .applePay, request: request("VISA"))
        #expect(paid.status == "SUCCEEDED" && paid.walletNetwork == "VISA" && paid.cardId.isEmpty)
        let declined = try await payIns.createWalletPayIn(
            clientId: "shop", kind: .applePay, request: request("MASTERCARD"))
        #expect(declined.result == .doNotHonor)
        #expect(try await base.services.wallets.get(clientId: "shop", id: wallet.id).balance == 198)
        let missing = await PaymentsError.from {
            try await payIns.createWalletPayIn(clientId: "shop", kind: .googlePay, request: request("VISA", token: nil))
        }
        #expect(missing?.fieldErrors["PaymentData.TokenData"] != nil)
        for record in try await base.store.scanAll(Collections.payIns) {
            #expect(!String(decoding: record.value, as: UTF8.self).contains("c2VjcmV0LXRva2Vu"))
        }
    }

    @Test func userAndWalletTransactionsAreFilteredAndSorted() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card()
        let first = try await f.payIns.create(clientId: "shop", request: f.request(card: card, amount: 500, fees: 0))
        f.base.clock.advance(by: 10)
        let second = try await f.payIns.create(clientId: "shop", request: f.request(card: card, amount: 700, fees: 0))
        f.base.clock.advance(by: 10)
        let refund = try await f.payIns.refund(clientId: "shop", payInId: first.id, request: RefundRequest())
        func ids(_ filter: TransactionFilter, newestFirst: Bool = false, wallet: Bool = false) async throws -> [String]
        {
            let page = PageRequest(page: 1, perPage: 100, newestFirst: newestFirst)
            let found =
                wallet
                ? try await f.payIns.transactions(clientId: "shop", walletId: f.wallet.id, filter: filter, page: page)
                : try await f.payIns.transactions(clientId: "shop", userId: f.payer.id, filter: filter, page: page)
            return found.items.map(\.id)
        }
        #expect(try await ids(TransactionFilter()) == [first.id, second.id, refund.id])
        #expect(try await ids(TransactionFilter(), newestFirst: true) == [refund.id, second.id, first.id])
        #expect(try await ids(TransactionFilter(), wallet: true) == [first.id, second.id, refund.id])
        #expect(
            try await ids(
                try TransactionFilter(status: nil, type: nil, nature: "REFUND", beforeDate: nil, afterDate: nil)) == [
                    refund.id
                ])
        #expect(
            try await ids(
                try TransactionFilter(status: "SUCCEEDED", type: "PAYIN", nature: nil, beforeDate: nil, afterDate: nil))
                == [first.id, second.id])
        #expect(
            try await ids(
                try TransactionFilter(
                    status: nil, type: nil, nature: nil, beforeDate: String(second.creationDate), afterDate: nil)) == [
                    first.id
                ])
        #expect(
            try await ids(
                try TransactionFilter(
                    status: nil, type: nil, nature: nil, beforeDate: nil, afterDate: String(first.creationDate))) == [
                    second.id, refund.id,
                ])
        #expect(
            try await ids(
                try TransactionFilter(status: "FAILED", type: nil, nature: nil, beforeDate: nil, afterDate: nil)
            ).isEmpty)
        let bad = await PaymentsError.from {
            try TransactionFilter(status: "DONE", type: nil, nature: nil, beforeDate: "x", afterDate: nil)
        }
        #expect(bad?.fieldErrors.keys.sorted() == ["BeforeDate", "Status"])
        #expect(await PaymentsError.from { try await ids(TransactionFilter(), wallet: true) } == nil)
    }

    @Test func binMetadataComesFromTheBrandAndCountryTables() throws {
        let f = PaymentsFixture()
        let service = PaymentMethodMetadataService(environment: f.services.environment)
        let visa = try service.lookUp(type: "BIN", bin: "497010", token: nil)
        #expect(visa.brand == .visa && visa.network == "VISA" && visa.issuerCountryCode == "FR")
        #expect(visa.cardType == "DEBIT" && visa.issuingBank == "CARDVAULT SANDBOX BANK")
        let mastercard = try service.lookUp(type: "BIN", bin: "55555555", token: nil)
        #expect(mastercard.brand == .mastercard && mastercard.issuerCountryCode == "US")
        let amex = try service.lookUp(type: "BIN", bin: "375989", token: nil)
        #expect(amex.network == "AMEX")
        let unknown = try service.lookUp(type: "BIN", bin: "000000", token: nil)
        #expect(unknown.brand == nil && unknown.issuingBank == nil)
        #expect((try? service.lookUp(type: "BIN", bin: "12345", token: nil)) == nil)
        #expect((try? service.lookUp(type: "IBAN", bin: "497010", token: nil)) == nil)
    }

    @Test func categorizingNeedsTheNewCategorysFieldsAndWritesItsEvent() async throws {
        let f = PaymentsFixture()
        let user = try await f.payer()
        var owner = UserFields()
        owner.userCategory = "OWNER"
        owner.termsAndConditionsAccepted = true
        let missing = await PaymentsError.from {
            try await f.services.users.categorize(clientId: "shop", id: user.id, type: .natural, changes: owner)
        }
        #expect(missing?.fieldErrors["Birthday"] != nil && missing?.fieldErrors["Nationality"] != nil)
        owner.birthday = 188_352_000
        owner.nationality = "FR"
        owner.countryOfResidence = "FR"
        let promoted = try await f.services.users.categorize(
            clientId: "shop", id: user.id, type: .natural, changes: owner)
        #expect(promoted.userCategory == "OWNER")
        var payer = UserFields()
        payer.userCategory = "PAYER"
        #expect(
            try await f.services.users.categorize(clientId: "shop", id: user.id, type: .natural, changes: payer)
                .userCategory == "PAYER")
        let types = try await f.store.scanAll(Collections.events).map {
            try RecordCoding.decode(PaymentEvent.self, from: $0).eventType
        }
        #expect(types.filter { $0 == .userCategoryUpdatedToOwner }.count == 1)
        #expect(types.filter { $0 == .userCategoryUpdatedToPayer }.count == 1)
        #expect(
            await PaymentsError.from {
                try await f.services.users.categorize(clientId: "shop", id: user.id, type: .legal, changes: payer)
            }?.code == .notFound)
    }

    @Test func closingAUserDeactivatesErasesAndAudits() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card()
        let (other, _) = try await f.card(PayInFixture.challenged)
        let closed = try await f.base.services.closeUser(clientId: "shop", id: f.payer.id, type: .natural)
        #expect(closed.userStatus == "CLOSED")
        for id in [card.id, other.id] {
            #expect(try await f.base.services.cards.get(clientId: "shop", id: id).active == false)
            #expect(try await f.base.store.get(Collections.vault, id: "shop:" + id) == nil)
            let audit = try #require(
                try await f.base.store.read(CardErasure.self, Collections.cardErasures, id: "shop:" + id))
            #expect(audit.value.userId == f.payer.id && audit.value.reason == "user-closed")
        }
        #expect(
            await PaymentsError.from { try await f.payIns.create(clientId: "shop", request: f.request(card: card)) }?
                .fieldErrors["CardId"] != nil)
        // Closing again changes nothing.
        _ = try await f.base.services.closeUser(clientId: "shop", id: f.payer.id, type: .natural)
        let all = try await events(f)
        #expect(count(all, .userClosed, f.payer.id) == 1)
        #expect(count(all, .cardDeactivated, card.id) == 1 && count(all, .cardDeactivated, other.id) == 1)
        // No log line names a card number.
        for line in f.base.logs.renderedLines {
            #expect(!line.contains(PayInFixture.frictionless) && !line.contains(PayInFixture.challenged))
        }
        #expect(
            await PaymentsError.from {
                try await f.base.services.closeUser(clientId: "shop", id: f.payer.id, type: .legal)
            }?.code == .notFound)
    }
}
