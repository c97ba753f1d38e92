import AdminChannel
import CardKit
import CardVaultTesting
import Configuration
import Foundation
import HTTPServer
import Testing
import VaultCore
import VaultCrypto
import VaultStore

@testable import CardVaultApp
@testable import Checkout
@testable import MasterpassAPI
@testable import Payments

/// A 3-D Secure step for route tests: frictionless unless told to challenge.
final class MasterpassTestAuthenticator: CheckoutAuthenticator {
    let challenge = Locked(false)
    let finished = Locked<[String: Bool]>([:])

    func start(_ request: CheckoutAuthenticationRequest) async throws -> CheckoutAuthenticationStart {
        if challenge.withLock({ $0 }) {
            return .challenge(authenticationId: "auth-1", redirectURL: "/acs-test", expiresAt: .distantFuture)
        }
        return .decided(
            authenticationId: "auth-0",
            CheckoutAuthenticationOutcome(
                status: .authenticated, challenged: false, resultCode: "000000", resultMessage: "Success"))
    }

    func outcome(clientId: String, authenticationId: String) async throws -> CheckoutAuthenticationOutcome? {
        finished.withLock { $0[authenticationId] }.map {
            CheckoutAuthenticationOutcome(
                status: $0 ? .authenticated : .notAuthenticated, challenged: true, resultCode: $0 ? "000000" : "101301",
                resultMessage: "")
        }
    }
}

/// The Masterpass routes in-process, over the real merchant API services (so cards go through the real
/// tokenization path) and an in-memory store; two clients, `shop` and `rival`, each with a bearer token.
struct MasterpassHarness {
    let services: MerchantServices
    let router: Router
    let authenticator = MasterpassTestAuthenticator()
    var tokens: [String: String] = [:]
    static let checkoutId = "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"
    static let rivalCheckoutId = "ffffeeeeddddccccbbbbaaaa99998888"

    static func make() async throws -> MasterpassHarness {
        let environment = PaymentsEnvironment.testing()
        let services = MerchantServices(environment: environment)
        var harness = MasterpassHarness(services: services)
        for name in ["shop", "rival"] {
            let credentials = try await services.clients.create(name: name)
            let client = try await services.clients.authenticate(
                clientId: credentials.clientId, apiKey: credentials.apiKey)
            harness.tokens[name] = try await services.bearerTokens.issue(for: client).accessToken.unsafeRevealed
        }
        for (name, id, prefix) in [
            ("shop", checkoutId, "https://shop.example/return"), ("rival", rivalCheckoutId, "https://rival.example/cb"),
        ] {
            let response = await harness.send(
                "POST", "/masterpass/checkouts", as: name,
                body:
                    #"{"checkoutId":"\#(id)","callbackUrlPrefixes":["\#(prefix)"],"allowedCardTypes":["master","visa"],"merchantName":"\#(name)"}"#
            )
            #expect(response.status == 201, "\(response.bodyText)")
        }
        return harness
    }

    private init(services: MerchantServices) {
        self.services = services
        var router = Router()
        let routes = try! CheckoutAssembly.routes(
            services: services, configuration: CardVaultConfiguration(publicURL: "http://127.0.0.1:9999"),
            authenticator: authenticator)
        routes.register(on: &router)
        self.router = router
    }

    func send(
        _ method: String, _ target: String, as client: String? = nil, body: String = "", headers: [String: String] = [:]
    ) async -> Response {
        var fields = HTTPHeaders()
        if let client { fields.set("Authorization", "Bearer " + (tokens[client] ?? client)) }
        for (name, value) in headers { fields.set(name, value) }
        return await router.respond(
            to: Request(
                method: HTTPMethod(method), target: target, headers: fields, body: Array(body.utf8),
                remoteAddress: "192.0.2.10"))
    }

    /// The body of `POST /masterpass/checkouts/{checkoutId}/sessions` with `overrides` (JSON values as text:
    /// `"true"`, `11`, `"\"USD\""`; nil removes a field).
    static func sessionBody(_ overrides: [String: String?] = [:]) -> String {
        var fields: [String: String?] = [
            "cartId": #""cart-1""#, "amount": "1122", "currency": #""USD""#,
            "allowedCardTypes": #"["master","visa"]"#, "suppressShippingAddress": "true", "locale": #""en_US""#,
            "channel": #""mobile""#, "cryptoOptions": #"[{"cardType":"master","format":["UCAF","ICC"]}]"#,
            "callbackUrl": #""https://shop.example/return""#,
        ]
        for (key, value) in overrides { fields[key] = value }
        return "{"
            + fields.compactMap { key, value in value.map { "\"\(key)\":\($0)" } }.sorted().joined(separator: ",") + "}"
    }

    /// Starts a checkout as `client` (the shop) and returns the page path of the URL it got back.
    func checkoutURL(
        _ overrides: [String: String?] = [:], as client: String = "shop", checkoutId: String = checkoutId
    )
        async -> String
    {
        let started = await send(
            "POST", "/masterpass/checkouts/\(checkoutId)/sessions", as: client, body: Self.sessionBody(overrides))
        #expect(started.status == 201, "\(started.bodyText)")
        let url = started.jsonObject["url"] as? String ?? ""
        return url.hasPrefix("http://127.0.0.1:9999") ? String(url.dropFirst("http://127.0.0.1:9999".count)) : url
    }

    static let cardForm =
        "cardNumber=5555+5555+5555+4444&expiry=12%2F29&securityCode=123&cardHolderName=Ada+Lovelace"
        + "&billingLine1=1+Main+St&billingCity=Springfield&billingPostalCode=12345&billingCountry=US"
        + "&javascriptEnabled=false&screenWidth=1280"

    /// Opens a checkout and pays; returns the callback URL the browser is sent to.
    func pay(_ overrides: [String: String?] = [:], form: String = cardForm) async throws -> String {
        let opened = await send("GET", await checkoutURL(overrides))
        #expect(opened.status == 303)
        let page = try #require(opened.headers["Location"])
        let submitted = await send(
            "POST", page + "/submit", body: form, headers: ["Content-Type": "application/x-www-form-urlencoded"])
        #expect(submitted.status == 303, "\(submitted.bodyText)")
        return try #require(submitted.headers["Location"])
    }
}

extension Response {
    var jsonObject: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }

    /// The `ReasonCode`s and `Source`s of an Errors body.
    var reasons: [(source: String, reason: String)] {
        let list = ((jsonObject["Errors"] as? [String: Any])?["Error"] as? [[String: Any]]) ?? []
        return list.map { ($0["Source"] as? String ?? "", $0["ReasonCode"] as? String ?? "") }
    }
}

@Suite struct MasterpassRoutesTests {
    typealias Harness = MasterpassHarness

    @Test func anUnavailableServiceSays503WithRetryAfterAndOnlyThen() {
        let unavailable = MasterpassErrorResponse(CheckoutError(.unavailable, "the store cannot write now"))
            .makeResponse()
        #expect(unavailable.status.code == 503)
        #expect(unavailable.headers["Retry-After"] == "1")
        let missing = MasterpassErrorResponse(CheckoutError(.notFound, "no such transaction")).makeResponse()
        #expect(missing.status.code == 404)
        #expect(missing.headers["Retry-After"] == nil)
    }

    @Test func checkoutToPaymentDataToPostback() async throws {
        let h = try await Harness.make()
        let callback = try await h.pay()
        #expect(callback.hasPrefix("https://shop.example/return?"))
        let items = queryItems(callback)
        #expect(items["mpstatus"] == "success")
        let transactionId = try #require(items["oauth_token"])

        let path = "/masterpass/paymentdata/\(transactionId)?checkoutId=\(Harness.checkoutId)&cartId=cart-1"
        let response = await h.send("GET", path, as: "shop")
        #expect(response.status == 200)
        #expect(response.headers["Cache-Control"] == "no-store")
        let card = try #require(response.jsonObject["card"] as? [String: Any])
        #expect(card["brandId"] as? String == "master")
        let accountNumber = try #require(card["accountNumber"] as? String)
        #expect(accountNumber != "5555555555554444" && accountNumber.hasPrefix("555555"))
        let tokenization = try #require(response.jsonObject["tokenization"] as? [String: Any])
        let cryptogram = try #require(tokenization["cryptogram"] as? [String: Any])
        #expect(cryptogram["cryptoType"] as? String == "ICC")
        #expect(cryptogram["eci"] as? String == "02")
        #expect(!response.bodyText.contains("5555555555554444"))

        // The card went through the merchant API: it is a card of the shop's.
        let cardId = try #require(
            try await h.services.environment.store.scanAll("cards").compactMap { record -> String? in
                let card = try RecordCoding.decode(Card.self, from: record)
                return card.alias == "555555XXXXXX4444" ? card.clientId : nil
            }.first)
        #expect(cardId == "shop")

        let postback =
            #"{"transactionId":"\#(transactionId)","checkoutId":"\#(Harness.checkoutId)","currency":"USD","amount":11.22,"paymentSuccessful":true,"paymentCode":"123456","paymentDate":"2026-01-01T12:00:00Z"}"#
        #expect(await h.send("POST", "/masterpass/postback", as: "shop", body: postback).status == 204)
        let accesses = await h.send("GET", "/masterpass/paymentdata/\(transactionId)/accesses", as: "shop")
        #expect(accesses.bodyText.contains("servedToken"))
    }

    @Test func oneClientCannotReadAnothersPaymentData() async throws {
        let h = try await Harness.make()
        let transactionId = try #require(queryItems(try await h.pay())["oauth_token"])
        let own = await h.send(
            "GET", "/masterpass/paymentdata/\(transactionId)?checkoutId=\(Harness.rivalCheckoutId)&cartId=cart-1",
            as: "rival")
        #expect(own.status == 404)
        #expect(own.reasons.map(\.reason) == ["RESOURCE_NOT_FOUND"])
        let borrowed = await h.send(
            "GET", "/masterpass/paymentdata/\(transactionId)?checkoutId=\(Harness.checkoutId)&cartId=cart-1",
            as: "rival")
        #expect(borrowed.status == 403)
        #expect(borrowed.reasons.map(\.reason) == ["AUTHORIZATION_FAILED"])
        let anonymous = await h.send("GET", "/masterpass/paymentdata/\(transactionId)?checkoutId=x&cartId=y")
        #expect(anonymous.status == 401)
        #expect(
            await h.send("GET", "/masterpass/paymentdata/\(transactionId)?checkoutId=x", as: "forged").status == 401)
    }

    @Test func backendCallsReportBadInputPerField() async throws {
        let h = try await Harness.make()
        let missing = await h.send("GET", "/masterpass/paymentdata/tx%2Fbad", as: "shop")
        #expect(missing.status == 400)
        #expect(Set(missing.reasons.map(\.source)) == ["transactionId", "checkoutId", "cartId"])
        let postback = await h.send(
            "POST", "/masterpass/postback", as: "shop", body: #"{"amount":"abc","currency":"US"}"#)
        #expect(postback.status == 400)
        #expect(
            Set(postback.reasons.map(\.source)) == [
                "transactionId", "checkoutId", "currency", "amount", "paymentSuccessful",
            ])
        #expect(await h.send("POST", "/masterpass/postback", as: "shop", body: "not json").status == 400)
        let wrongType = await h.send("POST", "/masterpass/postback", as: "shop", body: #"{"paymentSuccessful":"yes"}"#)
        #expect(wrongType.reasons.map(\.source) == ["paymentSuccessful"])
        let wrongCheckout = await h.send(
            "POST", "/masterpass/postback", as: "shop",
            body:
                #"{"transactionId":"mptx1","checkoutId":"\#(Harness.rivalCheckoutId)","currency":"USD","amount":"1.00","paymentSuccessful":true}"#
        )
        #expect(wrongCheckout.status == 403)
        #expect(wrongCheckout.reasons.map(\.reason) == ["AUTHORIZATION_FAILED"])
        let pairing = await h.send("GET", "/masterpass/pairingid", as: "shop")
        #expect(Set(pairing.reasons.map(\.source)) == ["pairingTransactionId", "userId"])
        let express = await h.send(
            "POST", "/masterpass/expresscheckout", as: "shop", body: #"{"amount":"1.001","currency":"USD"}"#)
        #expect(express.status == 400)
        #expect(express.reasons.map(\.source).contains("amount"))
        let registration = await h.send(
            "POST", "/masterpass/checkouts", as: "shop",
            body: #"{"callbackUrlPrefixes":["http://evil.example/"],"allowedCardTypes":["visa","paypal"]}"#)
        #expect(registration.status == 400)
        #expect(Set(registration.reasons.map(\.source)) == ["callbackUrlPrefixes[0]", "allowedCardTypes"])
    }

    @Test func badSessionFieldsGetAnErrorPerField() async throws {
        let h = try await Harness.make()
        func start(
            _ overrides: [String: String?], as client: String = "shop", id: String = Harness.checkoutId
        )
            async -> Response
        {
            await h.send(
                "POST", "/masterpass/checkouts/\(id)/sessions", as: client, body: Harness.sessionBody(overrides))
        }
        let bad = await start(["amount": "-5", "currency": #""USD""#, "cartId": #""""#])
        #expect(bad.status == 400)
        #expect(Set(bad.reasons.map(\.source)) == ["amount", "cartId"])
        #expect(await start(["amount": "12.5"]).reasons.map(\.source) == ["amount"])  // minor units are whole
        #expect(await start(["amount": #""1122""#]).reasons.map(\.source) == ["amount"])
        #expect(await start(["amount": "0"]).reasons.map(\.source) == ["amount"])
        #expect(await start(["currency": #""XXX1""#]).reasons.map(\.source) == ["currency"])
        let unregistered = await start(["callbackUrl": #""https://evil.example/return""#])
        #expect(unregistered.status == 400)
        #expect(unregistered.bodyText.contains("callbackUrl does not start with a URL registered for this checkoutId"))
        // The checkout id's policies: by default the merchant's server chooses per session; a checkout id registered
        // with `required` refuses a session that skips 3-D Secure or the security code.
        let chosen = await start(["suppress3DS": "true", "cvc2Support": "false", "cartId": #""chosen""#])
        #expect(chosen.status == 201)
        #expect(chosen.jsonObject["suppress3DS"] as? Bool == true && chosen.jsonObject["cvc2Support"] as? Bool == false)
        let strict = await h.send(
            "POST", "/masterpass/checkouts", as: "shop",
            body:
                #"{"checkoutId":"5tr1ct5tr1ct5tr1ct","callbackUrlPrefixes":["https://shop.example/return"],"allowedCardTypes":["master","visa"],"threeDSPolicy":"required","cvcPolicy":"required"}"#
        )
        #expect(strict.status == 201)
        #expect(strict.jsonObject["threeDSPolicy"] as? String == "required")
        let noThreeDS = await start(["suppress3DS": "true"], id: "5tr1ct5tr1ct5tr1ct")
        #expect(noThreeDS.status == 400)
        #expect(noThreeDS.reasons.map(\.source) == ["suppress3DS"])
        #expect(
            await start(["cvc2Support": "false"], id: "5tr1ct5tr1ct5tr1ct").reasons.map(\.source) == ["cvc2Support"])
        // Only the owner starts checkouts of its id; no token, no checkout.
        #expect(await start([:], as: "rival").status == 403)
        #expect(await start([:], id: "0000000000000000").status == 403)
        #expect(await h.send("POST", "/masterpass/checkouts/\(Harness.checkoutId)/sessions", body: "{}").status == 401)
        let started = await start(["userId": #""shopper-1""#])
        #expect(started.status == 201)
        #expect(started.jsonObject["amount"] as? Int == 1122)
        #expect(started.jsonObject["suppress3DS"] as? Bool == false)
        #expect(started.jsonObject["cvc2Support"] as? Bool == true)
        #expect((started.jsonObject["url"] as? String)?.hasPrefix("http://127.0.0.1:9999/srci/?checkoutId=") == true)
    }

    @Test func aTamperedCheckoutURLIsRefusedWithAClearPage() async throws {
        let h = try await Harness.make()
        let url = await h.checkoutURL(["userId": #""shopper-1""#])
        #expect(await h.send("GET", url).status == 303)
        for tampering in [
            "&userId=attacker", "&amount=0.01", "&suppress3DS=true", "&suppress3Ds=true", "&cvc2Support=false",
            "&currency=JPY", "&allowedCardTypes=master", "&callbackUrl=https%3A%2F%2Fshop.example%2Freturn",
            "&pairingId=mppair123",
        ] {
            let page = await h.send("GET", url + tampering)
            #expect(page.status == 400, "\(tampering)")
            #expect(page.headers["Location"] == nil)
            // The shopper gets a safe page; what was wrong is in the JSON answer (and the log).
            #expect(page.bodyText.contains("This checkout cannot be opened"), "\(tampering)")
            #expect(!page.bodyText.contains("cannot be set in the checkout URL"), "\(tampering)")
            let json = await h.send("GET", url + tampering, headers: ["Accept": "application/json"])
            #expect(json.reasons.map(\.reason) == ["INVALID_REQUEST"])
            #expect(json.bodyText.contains("cannot be set in the checkout URL"), "\(tampering)")
        }
        let otherCart = await h.send("GET", url.replacingOccurrences(of: "cartId=cart-1", with: "cartId=cart-9"))
        #expect(otherCart.status == 400)
        let otherCartJSON = await h.send(
            "GET", url.replacingOccurrences(of: "cartId=cart-1", with: "cartId=cart-9"),
            headers: ["Accept": "application/json"])
        #expect(otherCartJSON.bodyText.contains("cartId is not the cart the merchant started this checkout for"))
        // An old-style URL that carries everything in its query opens nothing.
        let legacy = await h.send(
            "GET", "/srci/?checkoutId=\(Harness.checkoutId)&cartId=c&amount=1.00&currency=USD&allowedCardTypes=master")
        #expect(legacy.status == 400)
        #expect(legacy.bodyText.contains("This checkout cannot be opened"))
        #expect(!legacy.bodyText.contains("checkoutSessionId is required"))
        let unknown = await h.send(
            "GET", "/srci/?checkoutId=\(Harness.checkoutId)&checkoutSessionId=" + String(repeating: "A", count: 32))
        #expect(unknown.status == 404)
        // The harmless parameters still work: the page in French.
        let french = await h.send("GET", url.replacingOccurrences(of: "locale=en_US", with: "locale=fr_FR"))
        let page = try #require(french.headers["Location"])
        #expect(page.hasSuffix("?locale=fr_FR"))
        #expect(await h.send("GET", page).bodyText.contains("lang=\"fr-FR\""))
        #expect(await h.send("GET", "/srci/notasession").status == 404)
        #expect(await h.send("POST", "/srci/notasession/submit", body: "a=b").status == 404)
    }

    @Test func formErrorsReRenderThePageWithoutTheCardNumber() async throws {
        let h = try await Harness.make()
        let opened = await h.send("GET", await h.checkoutURL())
        let page = try #require(opened.headers["Location"])
        let shown = await h.send("GET", page)
        #expect(shown.status == 200)
        #expect(shown.headers["Content-Security-Policy"]?.contains("script-src 'self'") == true)
        let response = await h.send(
            "POST", page + "/submit",
            body: "cardNumber=4000+0000+0000+0001&expiry=1&cardHolderName=%3Cb%3EAda&email=x",
            headers: ["Content-Type": "application/x-www-form-urlencoded"])
        #expect(response.status == 422)
        #expect(response.bodyText.contains(#"id="cardNumber" name="cardNumber" value="""#))
        #expect(!response.bodyText.contains("4000"))
        #expect(response.bodyText.contains("&lt;b&gt;Ada"))
        #expect(response.bodyText.contains("The card number is not valid."))
    }

    @Test func cancelAndChallengeRedirects() async throws {
        let h = try await Harness.make()
        let opened = await h.send("GET", await h.checkoutURL())
        let page = try #require(opened.headers["Location"])
        let cancelled = await h.send("POST", page + "/cancel")
        #expect(cancelled.status == 303)
        #expect(queryItems(try #require(cancelled.headers["Location"]))["mpstatus"] == "cancel")

        h.authenticator.challenge.withLock { $0 = true }
        let second = try #require(
            await h.send("GET", await h.checkoutURL(["cartId": #""cart-2""#])).headers["Location"])
        let submitted = await h.send(
            "POST", second + "/submit", body: Harness.cardForm,
            headers: ["Content-Type": "application/x-www-form-urlencoded"])
        #expect(submitted.headers["Location"] == "/acs-test")
        #expect(await h.send("GET", second + "/return").status == 200)  // still waiting
        h.authenticator.finished.withLock { $0["auth-1"] = true }
        let back = await h.send("GET", second + "/return")
        #expect(queryItems(try #require(back.headers["Location"]))["mpstatus"] == "success")
    }

    @Test func operatorFlagsAClientPCICompliantOverTheAdminChannel() async throws {
        let h = try await Harness.make()
        let transactionId = try #require(queryItems(try await h.pay())["oauth_token"])
        let path = "/masterpass/paymentdata/\(transactionId)?checkoutId=\(Harness.checkoutId)&cartId=cart-1"
        let before = await h.send("GET", path, as: "shop")
        #expect((before.jsonObject["card"] as? [String: Any])?["accountNumber"] as? String != "5555555555554444")
        let handlers = AdminHandlers()
        MerchantAdminCommands.register(h.services, in: handlers)
        let answer = try await handlers.invoke(
            "checkout.pci", arguments: ["clientId": .string("shop"), "compliant": .bool(true)])
        #expect(answer["pciCompliant"] == .bool(true))
        await #expect(throws: AdminError.self) {
            _ = try await handlers.invoke(
                "checkout.pci", arguments: ["clientId": .string("nobody"), "compliant": .bool(true)])
        }
        let after = await h.send("GET", path, as: "shop")
        #expect((after.jsonObject["card"] as? [String: Any])?["accountNumber"] as? String == "5555555555554444")
        let audit = await h.send("GET", "/masterpass/paymentdata/\(transactionId)/accesses", as: "shop")
        #expect(audit.bodyText.contains("servedToken") && audit.bodyText.contains("servedAccountNumber"))
    }

    @Test func assetsAndPaymentMethod() async throws {
        let h = try await Harness.make()
        let script = await h.send("GET", "/srci/assets/checkout.js")
        #expect(script.status == 200)
        #expect(script.headers["Content-Type"] == "text/javascript; charset=utf-8")
        #expect(await h.send("GET", "/srci/assets/checkout.css").status == 200)
        #expect(await h.send("GET", "/srci/assets/click-to-pay.svg").bodyText.contains("Click to Pay"))
        let method = await h.send("GET", "/masterpass/paymentmethod")
        #expect(method.jsonObject["paymentMethodName"] as? String == "Click to Pay")
        #expect(
            method.jsonObject["paymentMethodLogo"] as? String == "http://127.0.0.1:9999/srci/assets/click-to-pay.svg")
    }

    @Test func pairingAndExpressCheckoutOverHTTP() async throws {
        let h = try await Harness.make()
        let callback = try await h.pay(
            ["userId": #""shopper-1""#, "suppressShippingAddress": "false"],
            form: Harness.cardForm + "&shippingSameAsBilling=true&pairingConsent=true")
        let verifier = try #require(queryItems(callback)["pairing_verifier"])
        let pairing = await h.send(
            "GET", "/masterpass/pairingid?pairingTransactionId=\(verifier)&userId=shopper-1", as: "shop")
        let pairingId = try #require(pairing.jsonObject["pairingId"] as? String)
        let pre = await h.send("GET", "/masterpass/precheckoutdata/\(pairingId)", as: "shop")
        let cards = try #require(pre.jsonObject["cards"] as? [[String: Any]])
        #expect(cards.first?["lastFour"] as? String == "4444")
        #expect(cards.first?["default"] as? Bool == true)
        let addresses = try #require(pre.jsonObject["shippingAddresses"] as? [[String: Any]])
        var current = try #require(pre.jsonObject["pairingId"] as? String)
        var seen: Set<String> = [pairingId, current]
        for _ in 0..<2 {
            let body =
                #"{"checkoutId":"\#(Harness.checkoutId)","pairingId":"\#(current)","amount":"5.00","currency":"USD","cardId":"\#(cards[0]["cardId"] as? String ?? "")","shippingAddressId":"\#(addresses[0]["addressId"] as? String ?? "")","digitalGoods":false}"#
            let express = await h.send("POST", "/masterpass/expresscheckout", as: "shop", body: body)
            #expect(express.status == 200, "\(express.bodyText)")
            current = try #require(express.jsonObject["pairingId"] as? String)
            #expect(!seen.contains(current))
            seen.insert(current)
        }
        let stale = await h.send("GET", "/masterpass/precheckoutdata/\(pairingId)", as: "shop")
        #expect(stale.status == 404)
        #expect(await h.send("GET", "/masterpass/precheckoutdata/\(current)", as: "rival").status == 404)
    }
}

func queryItems(_ url: String) -> [String: String] {
    var result: [String: String] = [:]
    for item in URLComponents(string: url)?.queryItems ?? [] { result[item.name] = item.value ?? "" }
    return result
}
