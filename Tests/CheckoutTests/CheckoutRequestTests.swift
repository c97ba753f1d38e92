import CardKit
import Testing

@testable import Checkout

@Suite struct CheckoutRequestTests {
    typealias Fixture = CheckoutFixture

    func fieldErrors(_ overrides: [String: String?]) -> [String: String] {
        do {
            _ = try CheckoutRequest(queryItems: Fixture.query(overrides))
            return [:]
        } catch {
            return Dictionary(error.fieldErrors.map { ($0.field, $0.message) }, uniquingKeysWith: { first, _ in first })
        }
    }

    @Test func parsesTheSeedsCheckoutURL() throws {
        let request = try CheckoutRequest(queryItems: Fixture.query())
        #expect(request.checkoutId == Fixture.checkoutId)
        #expect(request.cartId == "cart-1")
        #expect(request.amount == Money(minorUnits: 1122, currency: .usd))
        #expect(request.allowedCardTypes == [.master, .visa])
        #expect(request.suppressShippingAddress == false)
        #expect(request.locale == .enUS)
        #expect(request.channel == .mobile)
        #expect(request.cryptoOptions[.master] == [.ucaf, .icc])
        #expect(request.cryptoType(for: .master) == .icc)
        #expect(request.cryptoType(for: .visa) == .tavv)
        #expect(request.cvc2Support)
        #expect(!request.suppress3DS)
        #expect(request.validityPeriodMinutes == 30)
        #expect(request.callbackURL?.host == "shop.example")
    }

    @Test func readsTheOptionalFields() throws {
        let request = try CheckoutRequest(
            queryItems: Fixture.query([
                "cvc2Support": "false", "suppress3DS": "true", "unpredictableNumber": "12345678",
                "validityPeriodMinutes": "5", "shippingLocationProfile": "US,AU,BE", "userId": "shopper-42",
                "locale": "fr-ca", "masterCryptoFormat": "UCAF",
            ]))
        #expect(!request.cvc2Support)
        #expect(request.suppress3DS)
        #expect(request.unpredictableNumber == "12345678")
        #expect(request.validityPeriodMinutes == 5)
        #expect(request.shippingCountries == ["US", "AU", "BE"])
        #expect(request.userId == "shopper-42")
        #expect(request.locale == .frFR)
        #expect(request.cryptoType(for: .master) == .ucaf)
    }

    @Test func acceptsCryptoOptionsAsJSON() throws {
        let request = try CheckoutRequest(
            queryItems: Fixture.query([
                "masterCryptoFormat": nil,
                "cryptoOptions": #"[{"cardType":"master","format":["UCAF"]},{"cardType":"visa","format":["TVV"]}]"#,
            ]))
        #expect(request.cryptoOptions == [.master: [.ucaf], .visa: [.tvv]])
    }

    @Test(
        arguments: [
            ("checkoutId", nil, "required"),
            ("checkoutId", "short", "8 to 64"),
            ("checkoutId", "a1b2c3d4-e5f6", "letters and digits"),
            ("cartId", nil, "required"),
            ("cartId", "cart 1", "without spaces"),
            ("amount", nil, "required"),
            ("amount", "12.456", "at most 2 decimals"),
            ("amount", "-1", "greater than zero"),
            ("amount", "0", "greater than zero"),
            ("amount", "0.00", "greater than zero"),
            ("amount", "1e3", "plain decimal"),
            ("amount", "12,50", "plain decimal"),
            ("amount", "99999999999999999999", "too large"),
            ("currency", nil, "required"),
            ("currency", "XYZ", "ISO 4217"),
            ("currency", "usd", "ISO 4217"),
            ("allowedCardTypes", nil, "required"),
            ("allowedCardTypes", "master,bitcoin", "comma-separated list"),
            ("callbackUrl", "javascript:alert(1)", "callbackUrl"),
            ("callbackUrl", "https://a@b.example/", "user information"),
            ("suppressShippingAddress", "yes", "true or false"),
            ("locale", "english", "en_US"),
            ("channel", "fax", "web or mobile"),
            ("masterCryptoFormat", "TVV", "ICC, UCAF"),
            ("visaCryptoFormat", "ICC", "TAVV, TVV"),
            ("cryptoOptions", "[{\"cardType\":\"master\"}]", "JSON array"),
            ("cryptoOptions", "not json", "JSON array"),
            ("cvc2Support", "1", "true or false"),
            ("suppress3Ds", "maybe", "true or false"),
            ("unpredictableNumber", "not base64!", "base64"),
            ("unpredictableNumber", "ab", "base64"),
            ("validityPeriodMinutes", "0", "1 to 1440"),
            ("validityPeriodMinutes", "1441", "1 to 1440"),
            ("validityPeriodMinutes", "ten", "1 to 1440"),
            ("shippingLocationProfile", "USA,FR", "ISO 3166"),
            ("userId", "has space", "letters, digits"),
            ("userId", "a/b", "letters, digits"),
        ] as [(String, String?, String)])
    func refusesBadInputAtEveryField(_ field: String, _ value: String?, _ fragment: String) {
        let errors = fieldErrors([field: value])
        #expect(errors[field]?.contains(fragment) == true, "\(field)=\(value ?? "nil"): \(errors)")
    }

    @Test func yenAmountsHaveNoDecimals() {
        #expect(fieldErrors(["currency": "JPY", "amount": "12.5"])["amount"]?.contains("whole number") == true)
        #expect(fieldErrors(["currency": "JPY", "amount": "1250"]).isEmpty)
        // Major units with exactly the currency's decimals: 4990 for EUR is not silently 4990.00 EUR.
        let bare = fieldErrors(["currency": "EUR", "amount": "4990"])["amount"]
        #expect(bare?.contains("exactly 2 decimals in EUR") == true)
        #expect(bare?.contains("write 4990.00 for 4990.00 EUR, or 49.90 if 4990 is in minor units") == true)
        #expect(fieldErrors(["currency": "EUR", "amount": "49.9"])["amount"]?.contains("exactly 2 decimals") == true)
        #expect(fieldErrors(["currency": "EUR", "amount": "4990.00"]).isEmpty)
        #expect(fieldErrors(["currency": "BHD", "amount": "1.25"])["amount"]?.contains("exactly 3 decimals") == true)
        #expect(fieldErrors(["currency": "BHD", "amount": "1.255"]).isEmpty)
    }

    @Test func reportsEveryBadFieldAtOnceAndDuplicates() {
        var items = Fixture.query(["amount": "abc", "currency": nil])
        items.append(("cartId", "again"))
        do {
            _ = try CheckoutRequest(queryItems: items)
            Issue.record("expected an error")
        } catch {
            let fields = Set(error.fieldErrors.map(\.field))
            #expect(fields == ["cartId", "currency", "amount"])
            #expect(error.code == .invalidRequest)
        }
    }

    @Test func bothSuppress3DSSpellingsWorkAndMustAgree() throws {
        #expect(try CheckoutRequest(queryItems: Fixture.query(["suppress3Ds": "true"])).suppress3DS)
        #expect(try CheckoutRequest(queryItems: Fixture.query(["suppress3DS": "TRUE"])).suppress3DS)
        #expect(fieldErrors(["suppress3Ds": "true", "suppress3DS": "false"])["suppress3DS"] != nil)
    }

    @Test func ignoresUnknownParameters() throws {
        var items = Fixture.query()
        items += [("platform", "android"), ("sdkVersion", "1.0"), ("merchantName", "x")]
        #expect(try CheckoutRequest(queryItems: items).cartId == "cart-1")
    }
}
