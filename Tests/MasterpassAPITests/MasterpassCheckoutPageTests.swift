import CardKit
import Checkout
import Foundation
import HTTPServer
import Testing

@testable import MasterpassAPI

@Suite struct MasterpassCheckoutPageTests {
    static let hostile = "<script>alert(\"x\")</script>&'"

    static func session(
        _ overrides: [String: String] = [:], merchantName: String = "Fancy Shop", saved: [CheckoutSavedCard] = [],
        problem: CheckoutSessionStateMachine.CheckoutFormProblem? = nil
    ) throws -> CheckoutSession {
        var fields = [
            "checkoutId": "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6", "cartId": "cart-1", "amount": "11.22", "currency": "USD",
            "allowedCardTypes": "master,visa",
        ]
        for (key, value) in overrides { fields[key] = value }
        let request = try CheckoutRequest(queryItems: fields.map { ($0.key, $0.value) })
        return CheckoutSession(
            sessionId: "S3ss10nS3ss10nS3ss10nS3ss10nABCD", transactionId: "mptx1", clientId: "shop", request: request,
            callback: try CheckoutCallbackURL(parsing: "https://shop.example/cb"), merchantName: merchantName,
            machine: CheckoutSessionStateMachine(
                expiresAt: Date(timeIntervalSince1970: 2_000_000_000), suppress3DS: false, pairingPossible: false),
            createdAt: 0, savedCards: saved, problem: problem)
    }

    /// The `id`s of inputs and the `for`s of labels.
    static func ids(_ html: String, _ pattern: String) -> Set<String> {
        let regex = try! NSRegularExpression(pattern: pattern)
        let range = NSRange(html.startIndex..., in: html)
        return Set(regex.matches(in: html, range: range).map { String(html[Range($0.range(at: 1), in: html)!]) })
    }

    @Test func escapesEveryInterpolatedValue() throws {
        let values = CheckoutFormValues(
            cardHolderName: Self.hostile, expiry: Self.hostile,
            billing: CheckoutAddressForm(line1: Self.hostile, city: Self.hostile, country: Self.hostile),
            shipping: CheckoutAddressForm(line1: Self.hostile, postalCode: Self.hostile), email: Self.hostile,
            phone: Self.hostile, savedCardId: Self.hostile)
        let saved = CheckoutSavedCard(
            card: VaultedCheckoutCard(
                cardId: "card\"><b>", brand: .mastercard, alias: "555555XXXXXX4444", expiryMonth: 1, expiryYear: 2030,
                profilingReference: nil),
            cardHolderName: Self.hostile, billingAddress: nil, isDefault: true)
        let html = CheckoutPage.form(
            session: try Self.session(merchantName: Self.hostile, saved: [saved]),
            fieldErrors: [CheckoutFieldError(field: "cardHolderName\"<", message: Self.hostile)], values: values)
        #expect(!html.contains("<script>alert"))
        #expect(!html.contains("\"><b>"))
        #expect(html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;"))
        #expect(html.contains("card&quot;&gt;&lt;b&gt;"))
        let error = CheckoutPage.error(locale: .enUS, reference: Self.hostile, text: Self.hostile)
        #expect(!error.contains("<script>alert"))
    }

    @Test func everyInputHasALabelAndErrorsAreLinked() throws {
        let html = CheckoutPage.form(
            session: try Self.session(["userId": "u1"]),
            fieldErrors: [
                CheckoutFieldError(field: "cardNumber", message: "the card number is not valid"),
                CheckoutFieldError(field: "shippingCity", message: "enter the city"),
            ])
        let inputs = Self.ids(html, #"<input type="(?:text|email|tel)" id="([^"]+)""#)
            .union(Self.ids(html, #"<select id="([^"]+)""#))
        let labels = Self.ids(html, #"<label for="([^"]+)""#)
        #expect(inputs.isSubset(of: labels))
        #expect(inputs.contains("cardNumber") && inputs.contains("shippingCountry") && inputs.contains("email"))
        #expect(html.contains(#"aria-describedby="cardNumber-error" aria-invalid="true""#))
        // Errors are sentences, in the summary (which takes the focus) and next to their fields.
        #expect(html.contains(##"<a href="#shippingCity">Enter the city.</a>"##))
        #expect(html.contains(#"<p class="field-error" id="cardNumber-error">The card number is not valid.</p>"#))
        #expect(html.contains(#"id="error-summary" autofocus"#))
        #expect(html.contains(#"role="alert""#))
        #expect(html.contains(#"autocomplete="cc-number""#))
        #expect(html.contains(#"name="pairingConsent""#))
    }

    @Test func showsOnlyTheAllowedBrands() throws {
        let html = CheckoutPage.form(session: try Self.session(["allowedCardTypes": "visa,amex"]), fieldErrors: [])
        #expect(html.contains(#"<li data-brand="visa"><svg class="logo""#))
        #expect(html.contains(#"role="img" aria-label="American Express""#))
        // The logos sit inside the number field's box, after its input.
        #expect(html.contains(#"<div class="with-logos"><input type="text" id="cardNumber""#))
        #expect(!html.contains(#"data-brand="mastercard""#))
        #expect(html.contains(#"{"allowed":["visa","amex"]"#))
    }

    @Test func hidesTheSecurityCodeAndShippingWhenAsked() throws {
        let full = CheckoutPage.form(session: try Self.session(), fieldErrors: [])
        #expect(full.contains(#"id="securityCode""#))
        #expect(full.contains(#"id="shippingLine1""#))
        let reduced = CheckoutPage.form(
            session: try Self.session(["cvc2Support": "false", "suppressShippingAddress": "true"]), fieldErrors: [])
        #expect(!reduced.contains("securityCode"))
        #expect(!reduced.contains("shipping"))
        #expect(!reduced.contains("pairingConsent"))
    }

    @Test func carriesTheDeviceSignalFields() throws {
        let html = CheckoutPage.form(session: try Self.session(), fieldErrors: [])
        for field in CheckoutPage.deviceFields { #expect(html.contains(#"<input type="hidden" name="\#(field)""#)) }
        #expect(html.contains(#"name="javascriptEnabled" value="false""#))
        #expect(
            html.contains(
                #"<form id="checkout-form" method="post" action="/srci/S3ss10nS3ss10nS3ss10nS3ss10nABCD/submit?locale=en_US""#
            ))
        #expect(html.contains(#"action="/srci/S3ss10nS3ss10nS3ss10nS3ss10nABCD/cancel""#))
    }

    @Test func speaksFrench() throws {
        let html = CheckoutPage.form(
            session: try Self.session(["locale": "fr_FR"]),
            fieldErrors: [
                CheckoutFieldError(field: "cardNumber", message: "Mastercard cards are not accepted here"),
                CheckoutFieldError(field: "securityCode", message: "the security code must be 4 digits"),
                CheckoutFieldError(field: "expiry", message: "enter the expiry date as MM/YY"),
            ])
        #expect(html.contains(#"<html lang="fr-FR">"#))
        #expect(html.contains("Numéro de carte"))
        #expect(html.contains("Payer 11,22\u{00A0}USD"))
        #expect(html.contains("Les cartes Mastercard ne sont pas acceptées ici."))
        #expect(html.contains("Le code de sécurité doit comporter 4 chiffres."))
        #expect(html.contains("Saisissez la date d&#39;expiration au format MM/AA."))
        #expect(html.contains(#"<option value="DE">Allemagne</option>"#))
        let english = CheckoutPage.form(session: try Self.session(), fieldErrors: [])
        #expect(english.contains("Pay 11.22\u{00A0}USD"))
        for key in CheckoutStrings.Key.allCases { #expect(CheckoutStrings.french[key] != nil, "\(key)") }
    }

    @Test func showsSavedCardsMaskedAndTheAuthenticationProblem() throws {
        let saved = CheckoutSavedCard(
            card: VaultedCheckoutCard(
                cardId: "card_1", brand: .visa, alias: "411111XXXXXX1111", expiryMonth: 3, expiryYear: 2031,
                profilingReference: nil),
            cardHolderName: "Ada", billingAddress: nil, isDefault: true)
        let html = CheckoutPage.form(
            session: try Self.session(saved: [saved], problem: .authenticationFailed), fieldErrors: [])
        #expect(html.contains(#"value="card_1" checked> Visa ending in 1111, expires 03/31"#))
        #expect(html.contains("Your bank could not verify this card"))
        #expect(!html.contains("411111"))
    }

    @Test func errorPageIsShopperSafe() {
        let html = CheckoutPage.error(locale: .frFR, reference: "req-42")
        #expect(html.contains("Ce paiement ne peut pas être ouvert"))
        #expect(html.contains("<code>req-42</code>"))
        #expect(!html.contains("amount") && !html.contains("<form") && !html.contains(".swift"))
    }

    @Test func addressFieldsFollowTheCheckoutIdsSetting() throws {
        var session = try Self.session(["suppressShippingAddress": "true"])
        session.addressFields = CheckoutAddressFields.none
        let none = CheckoutPage.form(session: session, fieldErrors: [])
        #expect(!none.contains("billing") && !none.contains(#"id="email""#))
        session.addressFields = .postalCodeAndCountry
        let compact = CheckoutPage.form(session: session, fieldErrors: [])
        #expect(compact.contains(#"id="billingPostalCode""#) && compact.contains(#"<select id="billingCountry""#))
        #expect(!compact.contains("billingLine1") && !compact.contains("billingCity"))
        session.addressFields = nil  // records from before the setting: full
        let full = CheckoutPage.form(session: session, fieldErrors: [])
        #expect(full.contains("billingLine1") && full.contains(#"id="email""#))
        #expect(full.contains(#"<option value="US">United States</option>"#))
        let restricted = CheckoutPage.form(
            session: try Self.session(["shippingLocationProfile": "FR,BE"]), fieldErrors: [])
        let start = try #require(restricted.range(of: #"<select id="shippingCountry""#))
        let end = try #require(restricted.range(of: "</select>", range: start.upperBound..<restricted.endIndex))
        let options = Self.ids(String(restricted[start.lowerBound..<end.lowerBound]), #"<option value="([A-Z]{2})""#)
        #expect(options == ["BE", "FR"])
    }

    @Test func keepsAValidCardNumberButNeverTheSecurityCode() throws {
        var values = CheckoutFormValues()
        values.cardNumber = "5555 5555 5555 4444"
        values.expiry = "12/30"
        let html = CheckoutPage.form(
            session: try Self.session(), fieldErrors: [CheckoutFieldError(field: "email", message: "x")], values: values
        )
        #expect(html.contains(#"id="cardNumber" name="cardNumber" value="5555 5555 5555 4444""#))
        #expect(html.contains(#"id="securityCode" name="securityCode" value="""#))
        #expect(html.contains(#"id="expiry" name="expiry" value="12/30""#))
    }

    @Test func brandTableIsGeneratedFromTheCatalog() throws {
        let object = try JSONSerialization.jsonObject(with: Data(CheckoutAssets.brandTableJSON.utf8)) as? [String: Any]
        let ranges = try #require(object?["ranges"] as? [[Any]])
        #expect(ranges.count == BrandCatalog.standardRanges.count)
        for (row, range) in zip(ranges, BrandCatalog.standardRanges) {
            #expect(row[0] as? String == range.brand.id)
            #expect((row[1] as? NSNumber)?.uint32Value == range.low)
            #expect((row[2] as? NSNumber)?.uint32Value == range.high)
            #expect((row[3] as? NSNumber)?.intValue == range.digits)
        }
        let names = try #require(object?["names"] as? [String: String])
        #expect(names["amex"] == "American Express")
        #expect(CheckoutAssets.script.contains(CheckoutAssets.brandTableJSON))
    }

    @Test func jsonStringsAreSafeInsideScripts() {
        #expect(HTMLText.jsonString("</script><!--\u{2028}\"\\") == #""\u003c/script\u003e\u003c!--\u2028\"\\""#)
    }
}
