import Foundation
import Testing
import VaultCore
import VaultStore

@testable import Payments

/// Web card pay-ins over an in-memory store: creation, the page's card step (frictionless, challenged, declined,
/// cancelled), the events each state change writes with it, and the wallet credit coming from the card pay-in.
@Suite struct WebPayInServiceTests {
    let base = PaymentsFixture()
    let service: WebPayInService
    let payer: User
    let wallet: Wallet

    init() async throws {
        service = WebPayInService(services: base.services)
        payer = try await base.payer()
        wallet = try await base.services.wallets.create(
            clientId: "shop", owners: [payer.id], description: "main", currency: "EUR", tag: nil)
    }

    func request(amount: Int64 = 1200, fees: Int64 = 100, culture: String? = "FR") -> WebPayInRequest {
        var request = WebPayInRequest()
        request.authorId = payer.id
        request.creditedWalletId = wallet.id
        request.debitedFunds = Funds(currency: "EUR", amount: amount)
        request.fees = Funds(currency: "EUR", amount: fees)
        request.returnURL = "https://shop.example/return?order=1#top"
        request.culture = culture
        return request
    }

    /// The events written so far, in date order then by type (one manual-clock instant holds several).
    /// The web pay-ins' events (the fixture's users, registrations and the inner direct pay-in write theirs too).
    func events() async throws -> [PaymentEvent] {
        try await base.store.scanAll(Collections.events).map { try RecordCoding.decode(PaymentEvent.self, from: $0) }
            .filter { $0.resourceId.hasPrefix("wpayin_") }
            .sorted { ($0.date, Self.rank($0.eventType)) < ($1.date, Self.rank($1.eventType)) }
    }

    static func rank(_ type: EventType) -> Int { type == .payInNormalCreated ? 0 : 1 }

    func outbox() async throws -> Int {
        try await base.store.scanAll(Collections.eventOutbox).filter {
            try RecordCoding.decode(PaymentEvent.self, from: $0).resourceId.hasPrefix("wpayin_")
        }.count
    }

    func pay(_ payIn: WebPayIn, number: String, secret: String? = nil) async throws -> WebPayInStep {
        try await service.pay(
            clientId: "shop", id: payIn.id, secret: secret ?? payIn.pageSecret!,
            card: WebPayInCardInput(
                number: Redacted(number), expiry: "12/30", securityCode: Redacted("123"), holderName: "Ada Lovelace"),
            signals: DeviceSignals(ipAddress: "192.0.2.9", userAgent: "UA/1", acceptLanguage: "fr-FR"),
            browserInfo: BrowserInfo(
                acceptHeader: "text/html", javaEnabled: false, javascriptEnabled: true, language: "fr-FR",
                colorDepth: 24, screenHeight: 800, screenWidth: 1280, timeZoneOffset: "0", userAgent: "UA/1"))
    }

    func balance() async throws -> Int64 {
        try #require(try await base.services.wallets.read(clientId: "shop", id: wallet.id)?.value.balance)
    }

    @Test func createWritesTheCreatedEventInTheSameBatch() async throws {
        try await PaymentEventsTests.hook(.payInNormalCreated, in: base.store)
        let payIn = try await service.create(clientId: "shop", request: request())
        #expect(payIn.status == "CREATED" && payIn.id.hasPrefix("wpayin_") && payIn.creditedUserId == payer.id)
        #expect(try #require(service.pageURL(for: payIn)).hasPrefix("https://vault.example/payins/web/shop/"))
        #expect(try await events().map(\.eventType) == [.payInNormalCreated])
        #expect(try await events().map(\.resourceId) == [payIn.id])
        #expect(try await outbox() == 1)
    }

    @Test func refusesBadRequestsNamingEachField() async throws {
        var bad = request(culture: "FRA")
        bad.returnURL = "javascript:alert(1)"
        bad.fees = Funds(currency: "EUR", amount: 5000)
        bad.cardType = "PAYPAL"
        let error = try #require(
            await PaymentsError.from { try await service.create(clientId: "shop", request: bad) })
        #expect(Set(error.fieldErrors.keys) == ["ReturnURL", "Culture", "CardType"])
        var wrongWallet = request()
        wrongWallet.debitedFunds = Funds(currency: "USD", amount: 100)
        wrongWallet.fees = Funds(currency: "USD", amount: 0)
        let currency = try #require(
            await PaymentsError.from { try await service.create(clientId: "shop", request: wrongWallet) })
        #expect(currency.fieldErrors.keys.contains("DebitedFunds.Currency"))
        #expect(try await events().isEmpty)
    }

    @Test func frictionlessCardSucceedsCreditsTheWalletOnceAndWritesItsEvent() async throws {
        let payIn = try await service.create(clientId: "shop", request: request())
        let step = try await pay(payIn, number: PaymentsFixture.visa)
        #expect(step == .redirect("https://shop.example/return?order=1&transactionId=\(payIn.id)#top"))
        let done = try await service.get(clientId: "shop", id: payIn.id)
        #expect(done.status == "SUCCEEDED" && done.result?.code == "000000" && done.pageSecret != nil)
        #expect(try await balance() == 1100)
        // The page again, or a second submission: back to the merchant, nothing charged twice.
        #expect(try await pay(payIn, number: PaymentsFixture.visa) == step)
        #expect(try await balance() == 1100)
        let (_, card) = try await service.extended(clientId: "shop", id: payIn.id)
        #expect(card?.alias.hasSuffix("1119") == true && card?.userId == payer.id)
        #expect(try await events().map(\.eventType) == [.payInNormalCreated, .payInNormalSucceeded])
        try await PaymentEventsTests.expectQueuedAsHooked(base.store)
        #expect(try await outbox() == 0)  // no hook
    }

    @Test func challengedCardWaitsForTheACSThenFollowsItsAnswer() async throws {
        let payIn = try await service.create(clientId: "shop", request: request(amount: 4990, fees: 0))
        guard case .redirect(let acs) = try await pay(payIn, number: "4970105181818183") else {
            Issue.record("expected the ACS page")
            return
        }
        #expect(acs.contains("/acs/p/shop/"))
        #expect(try await service.get(clientId: "shop", id: payIn.id).status == "CREATED")
        let linked = try await service.get(clientId: "shop", id: payIn.id)
        let charged = try await base.services.payIns.get(clientId: "shop", id: try #require(linked.payInId))
        // What the ACS page shows: the web pay-in's amount and language.
        #expect(charged.challengeDisplay?.amount == Funds(currency: "EUR", amount: 4990))
        #expect(charged.challengeDisplay?.locale == "FR")
        let secret = try #require(URLComponents(string: acs)?.queryItems?.first { $0.name == "s" }?.value)
        _ = try await base.services.payIns.answerChallenge(
            kind: "p", clientId: "shop", id: charged.id, secret: secret, code: "wrong")
        let step = try await service.resume(clientId: "shop", id: payIn.id, secret: payIn.pageSecret!)
        #expect(step == .redirect("https://shop.example/return?order=1&transactionId=\(payIn.id)#top"))
        let failed = try await service.get(clientId: "shop", id: payIn.id)
        #expect(failed.status == "FAILED")
        #expect(failed.result?.code != nil && failed.result?.code != "000000")
        #expect(try await balance() == 0)
        #expect(try await events().map(\.eventType) == [.payInNormalCreated, .payInNormalFailed])
    }

    @Test func wrongSecretsInvalidCardsAndCancelling() async throws {
        let payIn = try await service.create(clientId: "shop", request: request())
        let wrong = await PaymentsError.from { try await pay(payIn, number: PaymentsFixture.visa, secret: "x") }
        #expect(wrong?.code == .notFound)
        guard case .form(_, let errors) = try await pay(payIn, number: "4970107111111118") else {
            Issue.record("expected the form again")
            return
        }
        #expect(errors.map(\.0) == ["cardNumber"])
        #expect(try await service.get(clientId: "shop", id: payIn.id).status == "CREATED")
        let step = try await service.cancel(clientId: "shop", id: payIn.id, secret: payIn.pageSecret!)
        #expect(step == .redirect("https://shop.example/return?order=1&transactionId=\(payIn.id)#top"))
        let cancelled = try await service.get(clientId: "shop", id: payIn.id)
        #expect(cancelled.status == "FAILED" && cancelled.result?.code == "101002")
        #expect(try await events().map(\.eventType) == [.payInNormalCreated, .payInNormalFailed])
        #expect(try await balance() == 0)
    }
}
