import CardKit
import Foundation
import Testing
import VaultCore
import VaultStore

@testable import Checkout

/// The hosted checkout's records end at their lifetimes; page views store nothing; a card reaches a wallet only
/// when the merchant redeems the pairing.
@Suite struct CheckoutLifetimeTests {
    typealias Fixture = CheckoutFixture

    func sweeper(_ f: Fixture) -> RecordSweeper {
        RecordSweeper(store: f.store, clock: f.clock, lifetimes: f.service.recordLifetimes)
    }

    func total(_ f: Fixture) async throws -> Int {
        var count = 0
        for name in f.store.collectionNames { count += try await f.store.scanAll(name).count }
        return count
    }

    func redirectURL(_ step: CheckoutStep) -> String? {
        if case .redirect(let url) = step { return url }
        return nil
    }

    @Test func pageViewsStoreNothing() async throws {
        let f = Fixture()
        try await f.registerBoth()
        let session = try await f.start()
        let before = try await total(f)
        let query: [(String, String)] = [
            ("checkoutId", Fixture.checkoutId), ("checkoutSessionId", session.sessionId), ("cartId", "cart-1"),
            ("locale", "fr_FR"),
        ]
        for _ in 0..<200 {
            _ = try await f.service.open(queryItems: query)
            _ = try await f.service.session(id: session.sessionId)
            _ = try? await f.service.open(queryItems: [("checkoutId", Fixture.checkoutId), ("amount", "1.00")])
        }
        // Viewing an expired session does not write its expiry either.
        f.clock.advance(by: 3600)
        #expect(try await f.service.session(id: session.sessionId)?.machine.state == .expired)
        #expect(try await total(f) == before)
    }

    @Test func anUnfinishedSessionEndsAtItsExpiry() async throws {
        let f = Fixture()
        try await f.registerBoth()
        let session = try await f.start()
        let sweeper = sweeper(f)
        f.clock.advance(by: TimeInterval(f.service.configuration.sessionLifetimeSeconds - 1))
        try await sweeper.sweep()
        #expect(try await f.store.scanAll(CheckoutService.Collection.sessions).count == 1)
        #expect(try await f.store.scanAll(CheckoutService.Collection.transactions).count == 1)
        f.clock.advance(by: 1)
        let report = try await sweeper.sweep()
        #expect(report.expired[CheckoutService.Collection.sessions] == 1)
        #expect(try await f.service.session(id: session.sessionId) == nil)
        #expect(try await f.store.scanAll(CheckoutService.Collection.transactions).isEmpty)
        #expect(try await f.store.scanAll(CheckoutService.Collection.registrations).count == 2)  // kept
    }

    @Test func anAnonymousCheckoutErasesItsShopperWhenItEnds() async throws {
        let f = Fixture()
        try await f.registerBoth()
        let (anonymous, _) = try await f.checkout()
        let (identified, _) = try await f.checkout(["userId": "shopper-9"])
        let sweeper = sweeper(f)
        try await sweeper.sweep()
        #expect(f.vault.erased.withLock { $0 }.isEmpty)
        f.clock.advance(by: 3600)
        try await sweeper.sweep()
        // The checkout without a userId had a shopper of its own; the merchant's user keeps theirs.
        #expect(f.vault.erased.withLock { $0 } == ["shop/" + anonymous.transactionId])
        #expect(!f.vault.erased.withLock { $0 }.contains { $0.hasSuffix(identified.transactionId) })
    }

    @Test func aCompletedSessionLastsAsLongAsItsPaymentData() async throws {
        let f = Fixture()
        try await f.registerBoth()
        let (session, step) = try await f.checkout(["validityPeriodMinutes": "120"])
        #expect(redirectURL(step) != nil)
        _ = try await f.service.paymentData(
            clientId: "shop", transactionId: session.transactionId, checkoutId: Fixture.checkoutId, cartId: "cart-1")
        let sweeper = sweeper(f)
        f.clock.advance(by: 120 * 60 - 1)
        try await sweeper.sweep()
        _ = try await f.service.paymentData(
            clientId: "shop", transactionId: session.transactionId, checkoutId: Fixture.checkoutId, cartId: "cart-1")
        f.clock.advance(by: 1)
        try await sweeper.sweep()
        #expect(try await f.store.scanAll(CheckoutService.Collection.sessions).isEmpty)
        #expect(try await f.store.scanAll(CheckoutService.Collection.transactions).isEmpty)
        // The audit of the reads stays for a year after the last one.
        #expect(try await f.store.scanAll(CheckoutService.Collection.audit).count == 1)
        // (The last read was one second before the session ended.)
        f.clock.advance(by: TimeInterval(CheckoutService.auditRetentionSeconds) - 2)
        try await sweeper.sweep()
        #expect(try await f.store.scanAll(CheckoutService.Collection.audit).count == 1)
        // Over a second later; the audit is read hourly, so it goes at the next hourly read.
        f.clock.advance(by: 1)
        try await sweeper.sweep()
        #expect(try await f.store.scanAll(CheckoutService.Collection.audit).count == 1)
        f.clock.advance(by: TimeInterval(RecordLifetime.longLivedSweepSeconds - 1))
        try await sweeper.sweep()
        #expect(try await f.store.scanAll(CheckoutService.Collection.audit).isEmpty)
    }

    @Test func aCardReachesTheWalletOnlyWhenTheMerchantRedeemsThePairing() async throws {
        let f = Fixture()
        try await f.registerBoth()
        let (_, step) = try await f.checkout(["userId": "shopper-1"], form: Fixture.form(consent: true))
        let verifier = try #require(redirectURL(step).flatMap { queryItems(of: $0)["pairing_verifier"] })
        #expect(try await f.service.wallet(clientId: "shop", userId: "shopper-1") == nil)
        #expect(try await f.store.scanAll(CheckoutService.Collection.wallets).isEmpty)
        _ = try await f.service.pairingId(clientId: "shop", pairingTransactionId: verifier, userId: "shopper-1")
        let wallet = try #require(try await f.service.wallet(clientId: "shop", userId: "shopper-1"))
        #expect(wallet.cards.map(\.card.lastFour) == ["4444"])
        #expect(wallet.shippingAddresses.map(\.address.city) == ["Shelbyville"])
    }

    @Test func anUnredeemedPairingEndsWithItsCardOutsideEveryWallet() async throws {
        let f = Fixture()
        try await f.registerBoth()
        let (_, step) = try await f.checkout(["userId": "shopper-2"], form: Fixture.form(consent: true))
        let verifier = try #require(redirectURL(step).flatMap { queryItems(of: $0)["pairing_verifier"] })
        let sweeper = sweeper(f)
        f.clock.advance(by: TimeInterval(f.service.configuration.pairingTransactionLifetimeSeconds - 1))
        try await sweeper.sweep()
        #expect(try await f.store.scanAll(CheckoutService.Collection.pairingTransactions).count == 1)
        f.clock.advance(by: 1)
        try await sweeper.sweep()
        #expect(try await f.store.scanAll(CheckoutService.Collection.pairingTransactions).isEmpty)
        await #expect(throws: CheckoutError(.notFound, "")) {
            _ = try await f.service.pairingId(clientId: "shop", pairingTransactionId: verifier, userId: "shopper-2")
        }
        #expect(try await f.service.wallet(clientId: "shop", userId: "shopper-2") == nil)
    }

    @Test func theServerKeepsThe3DSAndCVCPolicyOfTheCheckoutId() async throws {
        let f = Fixture()
        _ = try await f.service.register(
            clientId: "strict", checkoutId: "5717c7c0ffee5717c7c0ffee5717c7c0",
            callbackPrefixes: ["https://s.example/"],
            allowedCardTypes: ["master"], threeDSPolicy: "required", cvcPolicy: "required")
        let registration = try #require(
            try await f.service.registration(checkoutId: "5717c7c0ffee5717c7c0ffee5717c7c0"))
        #expect(registration.threeDSPolicy == .required && registration.cvcPolicy == .required)
        func start(_ input: CheckoutSessionInput) async throws -> CheckoutSession {
            try await f.service.startSession(clientId: "strict", checkoutId: registration.checkoutId, input).session
        }
        let base = CheckoutSessionInput(cartId: "c1", amountMinorUnits: 500, currency: "EUR")
        var skip3DS = base
        skip3DS.suppress3DS = true
        await #expect {
            _ = try await start(skip3DS)
        } throws: { ($0 as? CheckoutError)?.fieldErrors.map(\.field) == ["suppress3DS"] }
        var noCVC = base
        noCVC.cvc2Support = false
        await #expect {
            _ = try await start(noCVC)
        } throws: { ($0 as? CheckoutError)?.fieldErrors.map(\.field) == ["cvc2Support"] }
        let session = try await start(base)
        #expect(session.request.amount == Money(minorUnits: 500, currency: .eur))
        #expect(!session.machine.suppress3DS && session.request.cvc2Support)
        // By default the merchant's server chooses per session.
        let open = try await f.service.register(
            clientId: "strict", callbackPrefixes: ["https://s.example/"], allowedCardTypes: ["master"])
        #expect(open.allowsSuppressing3DS && open.allowsSkippingSecurityCode)
        let chosen = try await f.service.startSession(
            clientId: "strict", checkoutId: open.checkoutId,
            CheckoutSessionInput(
                cartId: "c2", amountMinorUnits: 500, currency: "EUR", suppress3DS: true, cvc2Support: false))
        #expect(chosen.session.machine.suppress3DS && !chosen.session.request.cvc2Support)
        await #expect(throws: CheckoutError.self) {
            _ = try await f.service.register(
                clientId: "strict", callbackPrefixes: ["https://s.example/"], allowedCardTypes: ["master"],
                threeDSPolicy: "sometimes")
        }
    }
}
