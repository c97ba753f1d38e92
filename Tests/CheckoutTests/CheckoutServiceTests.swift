import CardKit
import Foundation
import Synchronization
import Testing
import VaultCore
import VaultStore

@testable import Checkout

@Suite struct CheckoutServiceTests {
    typealias Fixture = CheckoutFixture

    func redirectURL(_ step: CheckoutStep) -> String? {
        if case .redirect(let url) = step { return url }
        return nil
    }

    func formErrors(_ step: CheckoutStep) -> [String: String] {
        guard case .form(_, let errors) = step else { return [:] }
        return Dictionary(errors.map { ($0.field, $0.message) }, uniquingKeysWith: { first, _ in first })
    }

    // MARK: registration

    @Test func registrationValidatesEveryField() async throws {
        let f = Fixture()
        await #expect {
            _ = try await f.service.register(
                clientId: "shop", checkoutId: "bad id",
                callbackPrefixes: ["javascript:alert(1)", "https://ok.example/"],
                allowedCardTypes: ["master", "nope"], merchantName: String(repeating: "x", count: 101))
        } throws: { error in
            Set((error as? CheckoutError)?.fieldErrors.map(\.field) ?? [])
                == ["checkoutId", "callbackUrlPrefixes[0]", "allowedCardTypes", "merchantName"]
        }
        let generated = try await f.service.register(
            clientId: "shop", callbackPrefixes: ["https://shop.example/cb"], allowedCardTypes: ["master"])
        #expect(generated.checkoutId.count == 32)
        await #expect(throws: CheckoutError(.alreadyExists, "")) {
            _ = try await f.service.register(
                clientId: "rival", checkoutId: generated.checkoutId, callbackPrefixes: ["https://r.example/"],
                allowedCardTypes: ["visa"])
        }
        #expect(try await f.service.registrations(clientId: "shop").map(\.checkoutId) == [generated.checkoutId])
        #expect(try await f.service.registrations(clientId: "rival").isEmpty)
    }

    // MARK: opening

    @Test func unregisteredCallbackIsRefused() async throws {
        let f = Fixture()
        try await f.registerBoth()
        for callback in [
            "https://evil.example/checkout/return", "https://shop.example/checkout/returnx",
            "https://shop.example.evil.example/checkout/return", "https://rival.example/cb",
        ] {
            await #expect(throws: CheckoutError(.callbackNotRegistered, "")) {
                _ = try await f.start(["callbackUrl": callback])
            }
        }
        await #expect(throws: CheckoutError(.authorizationFailed, "")) {
            _ = try await f.start(["checkoutId": "00000000000000000000000000000000"])
        }
        await #expect(throws: CheckoutError(.invalidRequest, "")) {
            _ = try await f.start(["allowedCardTypes": "master,jcb"])
        }
        // Without a callbackUrl the registered one is used.
        let session = try await f.start(["callbackUrl": nil])
        #expect(session.callback.description == "https://shop.example/checkout/return")
    }

    // MARK: the standard checkout

    @Test func frictionlessCheckoutRedirectsWithTokenAndServesPaymentData() async throws {
        let f = Fixture()
        try await f.registerBoth()
        let (session, step) = try await f.checkout(["unpredictableNumber": "q83vEg=="])
        let url = try #require(redirectURL(step))
        #expect(url.hasPrefix("https://shop.example/checkout/return?order=7&"))
        let items = queryItems(of: url)
        #expect(items["oauth_token"] == session.transactionId)
        #expect(items["mpstatus"] == "success")
        #expect(items["pairing_verifier"] == nil)
        #expect(f.authenticator.started.withLock { $0.count } == 1)

        let data = try await f.service.paymentData(
            clientId: "shop", transactionId: session.transactionId, checkoutId: Fixture.checkoutId, cartId: "cart-1")
        #expect(data.card.brandId == "master")
        #expect(data.card.brandName == "MasterCard")
        #expect(data.card.accountNumber != Fixture.mastercard)
        #expect(data.card.accountNumber.hasPrefix("555555"))
        #expect(Luhn.isValid(data.card.accountNumber))
        #expect(data.card.expiryMonth == 12 && data.card.expiryYear == 2029)
        #expect(data.card.cardHolderName == "Ada Lovelace")
        #expect(data.card.billingAddress?.city == "Springfield")
        #expect(data.shippingAddress?.city == "Shelbyville")
        #expect(data.personalInfo?.recipientEmailAddress == "ada@example.com")
        #expect(data.tokenization.cryptogram.cryptoType == "ICC")
        #expect(data.tokenization.cryptogram.eci == "02")
        #expect(data.tokenization.cryptogram.unpredictableNumber == "q83vEg==")
        #expect(data.tokenization.fPanSuffix == "4444")
        #expect(data.authenticationOptions.authenticateMethod == "3DS")
        #expect(data.authenticationOptions.paResStatus == "Y")
        #expect(data.authenticationOptions.eciFlag == "02")
        #expect(data.authenticationOptions.cAvv?.count == 28)
        #expect(data.tokenization.cryptogram.expiresAt == Int64(f.clock.now.timeIntervalSince1970) + 30 * 60)
        let fields = MasterpassCryptogramFields(
            transactionId: session.transactionId, accountNumber: data.card.accountNumber,
            amount: Money(minorUnits: 1122, currency: .usd), unpredictableNumber: "q83vEg==", cryptoType: .icc,
            eci: "02",
            expiresAt: data.tokenization.cryptogram.expiresAt)
        #expect(MasterpassCryptograms(key: f.key).isValid(data.tokenization.cryptogram.cryptoValue, for: fields))
        // The PAN appears nowhere in the stored records.
        for collection in ["checkout-sessions", "checkout-transactions", "checkout-audit"] {
            for record in try await f.store.scanAll(collection) {
                #expect(!String(decoding: record.value, as: UTF8.self).contains(Fixture.mastercard))
            }
        }
    }

    @Test func visaWithUCAFOnlyAndGeneratedUnpredictableNumber() async throws {
        let f = Fixture()
        try await f.registerBoth()
        let (session, _) = try await f.checkout(
            ["masterCryptoFormat": "UCAF", "visaCryptoFormat": "TAVV"], form: Fixture.form(number: Fixture.visa))
        let data = try await f.service.paymentData(
            clientId: "shop", transactionId: session.transactionId, checkoutId: Fixture.checkoutId, cartId: "cart-1")
        #expect(data.card.brandId == "visa")
        #expect(data.tokenization.cryptogram.cryptoType == "TAVV")
        #expect(data.tokenization.cryptogram.eci == "05")
        #expect(data.tokenization.cryptogram.unpredictableNumber.count == 8)
    }

    @Test func pciCompliantClientsGetTheCardNumber() async throws {
        let f = Fixture()
        try await f.registerBoth()
        try await f.service.setPCICompliant(clientId: "shop", true)
        let (session, _) = try await f.checkout()
        let data = try await f.service.paymentData(
            clientId: "shop", transactionId: session.transactionId, checkoutId: Fixture.checkoutId, cartId: "cart-1")
        #expect(data.card.accountNumber == Fixture.mastercard)
        let accesses = try await f.service.paymentDataAccesses(clientId: "shop", transactionId: session.transactionId)
        #expect(accesses.map(\.outcome) == [.servedAccountNumber])
    }

    @Test func paymentDataIsForItsOwnerOnlyAndEveryReadIsAudited() async throws {
        let f = Fixture()
        try await f.registerBoth()
        let (session, _) = try await f.checkout()
        // Another client, with its own checkout id or with the owner's: nothing.
        await #expect(throws: CheckoutError(.notFound, "")) {
            _ = try await f.service.paymentData(
                clientId: "rival", transactionId: session.transactionId, checkoutId: Fixture.otherCheckoutId,
                cartId: "cart-1")
        }
        await #expect(throws: CheckoutError(.authorizationFailed, "")) {
            _ = try await f.service.paymentData(
                clientId: "rival", transactionId: session.transactionId, checkoutId: Fixture.checkoutId,
                cartId: "cart-1")
        }
        await #expect(throws: CheckoutError(.invalidRequest, "")) {
            _ = try await f.service.paymentData(
                clientId: "shop", transactionId: session.transactionId, checkoutId: Fixture.checkoutId, cartId: "cart-2"
            )
        }
        await #expect(throws: CheckoutError(.invalidRequest, "")) {
            _ = try await f.service.paymentData(clientId: "shop", transactionId: "bad/id", checkoutId: nil, cartId: nil)
        }
        _ = try await f.service.paymentData(
            clientId: "shop", transactionId: session.transactionId, checkoutId: Fixture.checkoutId, cartId: "cart-1")
        f.clock.advance(by: 30 * 60)
        await #expect(throws: CheckoutError(.expired, "")) {
            _ = try await f.service.paymentData(
                clientId: "shop", transactionId: session.transactionId, checkoutId: Fixture.checkoutId, cartId: "cart-1"
            )
        }
        let accesses = try await f.service.paymentDataAccesses(clientId: "shop", transactionId: session.transactionId)
        #expect(accesses.map(\.outcome) == [.refusedCartMismatch, .servedToken, .refusedExpired])
        #expect(
            try await f.service.paymentDataAccesses(clientId: "rival", transactionId: session.transactionId).isEmpty)
    }

    @Test func paymentDataBeforeCompletionIsRefused() async throws {
        let f = Fixture()
        try await f.registerBoth()
        let session = try await f.start()
        await #expect(throws: CheckoutError(.invalidState, "")) {
            _ = try await f.service.paymentData(
                clientId: "shop", transactionId: session.transactionId, checkoutId: Fixture.checkoutId, cartId: "cart-1"
            )
        }
    }

    // MARK: the form

    @Test func badFormInputIsReportedPerField() async throws {
        let f = Fixture()
        try await f.registerBoth()
        let session = try await f.start(["shippingLocationProfile": "FR"])
        let step = try await f.service.submit(
            sessionId: session.sessionId,
            form: CheckoutForm(
                cardNumber: Redacted("4111 1111 1111 1112"), expiry: "13/29", securityCode: Redacted("12"),
                cardHolderName: "", shipping: CheckoutAddressForm(line1: "x", city: "", postalCode: "1", country: "US"),
                email: "not-an-email", phone: "abc"),
            signals: CheckoutDeviceSignals())
        let errors = formErrors(step)
        #expect(errors["cardNumber"] == "the card number is not valid")
        #expect(errors["expiry"] != nil)
        #expect(errors["securityCode"] != nil)
        #expect(errors["cardHolderName"] != nil)
        #expect(errors["shippingCity"] != nil)
        #expect(errors["shippingCountry"] == "the merchant does not ship to this country")
        #expect(errors["email"] != nil)
        #expect(errors["phone"] != nil)
        for message in errors.values { #expect(!message.contains("4111")) }
        #expect(f.authenticator.started.withLock { $0.isEmpty })
    }

    @Test func brandsOutsideTheRequestAreRefusedBeforeVaulting() async throws {
        let f = Fixture()
        try await f.registerBoth()
        let session = try await f.start(["allowedCardTypes": "visa"])
        let step = try await f.service.submit(
            sessionId: session.sessionId, form: Fixture.form(), signals: CheckoutDeviceSignals())
        #expect(formErrors(step)["cardNumber"] == "Mastercard cards are not accepted here")
    }

    @Test func cvcIsNotRequiredWhenCVC2SupportIsOff() async throws {
        let f = Fixture()
        try await f.registerBoth()
        var form = Fixture.form()
        form.securityCode = nil
        let (_, step) = try await f.checkout(["cvc2Support": "false"], form: form)
        #expect(redirectURL(step) != nil)
    }

    @Test func suppressedShippingNeedsNoAddressAndSuppressed3DSSkipsIt() async throws {
        let f = Fixture()
        try await f.registerBoth()
        let (session, step) = try await f.checkout(
            ["suppressShippingAddress": "true", "suppress3Ds": "true"], form: Fixture.form(shipping: false))
        #expect(redirectURL(step) != nil)
        #expect(f.authenticator.started.withLock { $0.isEmpty })
        let data = try await f.service.paymentData(
            clientId: "shop", transactionId: session.transactionId, checkoutId: Fixture.checkoutId, cartId: "cart-1")
        #expect(data.shippingAddress == nil)
        #expect(data.authenticationOptions.authenticateMethod == "NO AUTHENTICATION")
        #expect(data.tokenization.cryptogram.eci == "00")
    }

    // MARK: challenge, failure, cancel, expiry

    @Test func challengeThenReturn() async throws {
        let f = Fixture()
        try await f.registerBoth()
        f.authenticator.plan(.challenge)
        let (session, step) = try await f.checkout()
        #expect(redirectURL(step) == "https://acs.test/challenge/auth1")
        #expect(
            f.authenticator.started.withLock { $0[0].returnURL }
                == "https://vault.test/srci/\(session.sessionId)/return")
        guard case .waiting = try await f.service.resume(sessionId: session.sessionId) else {
            Issue.record("expected to wait")
            return
        }
        f.authenticator.finish("auth1", passed: true)
        let done = try await f.service.resume(sessionId: session.sessionId)
        let doneURL = try #require(redirectURL(done))
        #expect(queryItems(of: doneURL)["mpstatus"] == "success")
        // A replayed return answers the same redirect.
        #expect(try await f.service.resume(sessionId: session.sessionId) == done)
    }

    @Test func failedChallengeShowsTheFormAgain() async throws {
        let f = Fixture()
        try await f.registerBoth()
        f.authenticator.plan(.challenge)
        let (session, _) = try await f.checkout()
        f.authenticator.finish("auth1", passed: false)
        guard case .form(let again, _) = try await f.service.resume(sessionId: session.sessionId) else {
            Issue.record("expected the form")
            return
        }
        #expect(again.problem == .authenticationFailed)
        await #expect(throws: CheckoutError(.invalidState, "")) {
            _ = try await f.service.paymentData(
                clientId: "shop", transactionId: session.transactionId, checkoutId: Fixture.checkoutId, cartId: "cart-1"
            )
        }
    }

    @Test func cancelRedirectsWithCancelStatus() async throws {
        let f = Fixture()
        try await f.registerBoth()
        let session = try await f.start()
        let step = try await f.service.cancel(sessionId: session.sessionId)
        let cancelURL = try #require(redirectURL(step))
        let items = queryItems(of: cancelURL)
        #expect(items["mpstatus"] == "cancel")
        #expect(items["oauth_token"] == session.transactionId)
        // Submitting after cancelling only repeats the cancel redirect.
        #expect(
            try await f.service.submit(sessionId: session.sessionId, form: Fixture.form(), signals: .init()) == step)
    }

    @Test func sessionsExpire() async throws {
        let f = Fixture()
        try await f.registerBoth()
        let session = try await f.start()
        f.clock.advance(by: 1800)
        guard
            case .expired = try await f.service.submit(
                sessionId: session.sessionId, form: Fixture.form(), signals: .init())
        else {
            Issue.record("expected expiry")
            return
        }
        #expect(try await f.service.session(id: session.sessionId)?.machine.state == .expired)
        await #expect(throws: CheckoutError(.notFound, "")) {
            _ = try await f.service.cancel(sessionId: "x")
        }
    }

    // MARK: postback

    @Test func postbackValidatesAndIsIdempotent() async throws {
        let f = Fixture()
        try await f.registerBoth()
        let (session, _) = try await f.checkout()
        let good = MasterpassPostbackInput(
            transactionId: session.transactionId, checkoutId: Fixture.checkoutId, currency: "USD", amount: "11.22",
            paymentSuccessful: true, paymentCode: "123456", paymentDate: "2026-01-01T00:00:00Z")
        await #expect {
            try await f.service.postback(clientId: "shop", MasterpassPostbackInput())
        } throws: { error in
            Set((error as? CheckoutError)?.fieldErrors.map(\.field) ?? [])
                == ["transactionId", "checkoutId", "currency", "amount", "paymentSuccessful"]
        }
        var bad = good
        bad.amount = "11.223"
        bad.paymentDate = "yesterday"
        bad.paymentCode = "12-34"
        await #expect {
            try await f.service.postback(clientId: "shop", bad)
        } throws: { error in
            Set((error as? CheckoutError)?.fieldErrors.map(\.field) ?? []) == ["amount", "paymentDate", "paymentCode"]
        }
        var wrongCheckout = good
        wrongCheckout.checkoutId = Fixture.otherCheckoutId
        await #expect(throws: CheckoutError(.authorizationFailed, "")) {
            try await f.service.postback(clientId: "shop", wrongCheckout)
        }
        try await f.service.postback(clientId: "shop", good)
        try await f.service.postback(clientId: "shop", good)
        var contradicting = good
        contradicting.paymentSuccessful = false
        await #expect(throws: CheckoutError(.invalidState, "")) {
            try await f.service.postback(clientId: "shop", contradicting)
        }
    }

    // MARK: pairing and express checkout

    @Test func pairOnceThenExpressCheckoutRotatesThePairingId() async throws {
        let f = Fixture()
        try await f.registerBoth()
        let (_, step) = try await f.checkout(["userId": "shopper-1"], form: Fixture.form(consent: true))
        let callback = try #require(redirectURL(step))
        let verifier = try #require(queryItems(of: callback)["pairing_verifier"])
        await #expect(throws: CheckoutError(.notFound, "")) {
            _ = try await f.service.pairingId(clientId: "shop", pairingTransactionId: verifier, userId: "someone-else")
        }
        await #expect(throws: CheckoutError(.notFound, "")) {
            _ = try await f.service.pairingId(clientId: "rival", pairingTransactionId: verifier, userId: "shopper-1")
        }
        let first = try await f.service.pairingId(clientId: "shop", pairingTransactionId: verifier, userId: "shopper-1")
        await #expect(throws: CheckoutError(.invalidState, "")) {
            _ = try await f.service.pairingId(clientId: "shop", pairingTransactionId: verifier, userId: "shopper-1")
        }
        let pre = try await f.service.preCheckoutData(clientId: "shop", pairingId: first)
        #expect(pre.pairingId != first)
        #expect(pre.cards.count == 1)
        #expect(pre.cards[0].lastFour == "4444")
        #expect(pre.cards[0].expiryYear == "29")
        #expect(pre.cards[0].isDefault)
        #expect(pre.shippingAddresses.count == 1)
        await #expect(throws: CheckoutError(.notFound, "")) {
            _ = try await f.service.preCheckoutData(clientId: "shop", pairingId: first)
        }
        var input = MasterpassExpressCheckoutInput(
            checkoutId: Fixture.checkoutId, pairingId: pre.pairingId,
            preCheckoutTransactionId: pre.preCheckoutTransactionId, amount: "20.00", currency: "USD",
            cardId: pre.cards[0].cardId, shippingAddressId: pre.shippingAddresses[0].addressId, digitalGoods: false)
        let one = try await f.service.expressCheckout(clientId: "shop", input)
        let second = try #require(one.pairingId)
        #expect(second != pre.pairingId)
        #expect(one.card.brandId == "master")
        #expect(one.shippingAddress?.city == "Shelbyville")
        await #expect(throws: CheckoutError(.notFound, "")) {
            _ = try await f.service.expressCheckout(clientId: "shop", input)  // the old pairing id is spent
        }
        input.pairingId = second
        input.preCheckoutTransactionId = nil
        let two = try await f.service.expressCheckout(clientId: "shop", input)
        #expect(two.pairingId != nil && two.pairingId != second)
        #expect(two.transactionId != one.transactionId)
        // The express transaction's payment data can be read back by its owner too.
        _ = try await f.service.paymentData(
            clientId: "shop", transactionId: two.transactionId, checkoutId: Fixture.checkoutId,
            cartId: "express")
        await #expect(throws: CheckoutError(.notFound, "")) {
            _ = try await f.service.expressCheckout(
                clientId: "rival",
                MasterpassExpressCheckoutInput(
                    checkoutId: Fixture.otherCheckoutId, pairingId: two.pairingId, amount: "1.00", currency: "USD",
                    cardId: pre.cards[0].cardId, digitalGoods: true))
        }
    }

    @Test func expressCheckoutValidatesEveryField() async throws {
        let f = Fixture()
        try await f.registerBoth()
        await #expect {
            _ = try await f.service.expressCheckout(
                clientId: "shop",
                MasterpassExpressCheckoutInput(amount: "1.234", currency: "EURO", cardId: "x/y"))
        } throws: { error in
            Set((error as? CheckoutError)?.fieldErrors.map(\.field) ?? [])
                == ["checkoutId", "pairingId", "cardId", "shippingAddressId", "currency"]
        }
    }

    @Test func pairedShopperSeesSavedCardsOnlyWithTheCurrentPairingId() async throws {
        let f = Fixture()
        try await f.registerBoth()
        let (_, step) = try await f.checkout(["userId": "shopper-1"], form: Fixture.form(consent: true))
        let callback = try #require(redirectURL(step))
        let verifier = try #require(queryItems(of: callback)["pairing_verifier"])
        let pairingId = try await f.service.pairingId(
            clientId: "shop", pairingTransactionId: verifier, userId: "shopper-1")
        let withoutProof = try await f.start(["userId": "shopper-1", "cartId": "c2"])
        #expect(withoutProof.savedCards.isEmpty)
        let withProof = try await f.start(["userId": "shopper-1", "cartId": "c3", "pairingId": pairingId])
        #expect(withProof.savedCards.map(\.card.lastFour) == ["4444"])
        let paid = try await f.service.submit(
            sessionId: withProof.sessionId,
            form: CheckoutForm(
                savedCardId: withProof.savedCards[0].cardId,
                shipping: CheckoutAddressForm(
                    line1: "2 Side St", city: "Shelbyville", postalCode: "54321", country: "US")),
            signals: .init())
        let paidURL = try #require(redirectURL(paid))
        #expect(queryItems(of: paidURL)["mpstatus"] == "success")
    }

    @Test func paymentMethodIsClickToPay() {
        let method = Fixture().service.paymentMethod()
        #expect(method.paymentMethodName == "Click to Pay")
        #expect(method.paymentMethodLogo == "https://vault.test/srci/assets/click-to-pay.svg")
    }
}
