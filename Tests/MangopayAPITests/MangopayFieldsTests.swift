import Testing

@testable import MangopayAPI
@testable import Payments

/// The binding layer of Mangopay request bodies (docs/wire-binding.md): each field kind against what the
/// official SDKs send and against hostile values.
@Suite struct MangopayFieldsTests {
    /// Binds `value` (raw JSON text) as the field `F` of a body through `read`; returns the result and the
    /// problem recorded for `F`, if any.
    func bind<T>(_ value: String, _ read: (inout MangopayFields) -> T?) throws -> (T?, String?) {
        var fields = try MangopayFields(body: Array(#"{"F":\#(value),"Other":1}"#.utf8))
        let result = read(&fields)
        return (result, fields.errors["F"])
    }

    static let extremes = [
        "-9223372036854775808", "9223372036854775807", "9223372036854775808", "18446744073709551616",
        "-9223372036854775809", "123456789012345678901234567890", "1e300", "-1e300", "1.5", "-0.5", "1E2", "1.0",
    ]

    @Test func textTakesStringsAndIntegers() throws {
        #expect(try bind(#""abc""#) { $0.string("F") } == ("abc", nil))
        #expect(try bind("123456789") { $0.string("F") } == ("123456789", nil))
        #expect(try bind("-9223372036854775808") { $0.string("F") } == ("-9223372036854775808", nil))
        #expect(try bind("9223372036854775807") { $0.string("F") } == ("9223372036854775807", nil))
        #expect(try bind("-0") { $0.string("F") } == ("0", nil))
        #expect(try bind("null") { $0.string("F") } == (nil, nil))
        // Not kept exactly (fractions, exponents, beyond 64 bits) or not text at all: refused, field named.
        for value in [
            "9223372036854775808", "18446744073709551616", "1.5", "1E2", "1.0", "1e300", "true", "false",
            "[]", #"["a"]"#, "{}",
        ] {
            let (text, problem) = try bind(value) { $0.string("F") }
            #expect(text == nil && problem?.contains("F") == true, "\(value)")
        }
    }

    @Test func integersTakeIntegralNumbersAndDigitStrings() throws {
        #expect(try bind("188352000") { $0.integer("F") } == (188_352_000, nil))
        #expect(try bind("188352000.0") { $0.integer("F") } == (188_352_000, nil))  // time.mktime() in the SDK's tests
        #expect(try bind("1E2") { $0.integer("F") } == (100, nil))
        #expect(try bind(#""-42""#) { $0.integer("F") } == (-42, nil))
        #expect(try bind(#""+60""#) { $0.integer("F") } == (60, nil))
        #expect(try bind("-9223372036854775808") { $0.integer("F") } == (Int64.min, nil))
        #expect(try bind("9223372036854775807") { $0.integer("F") } == (Int64.max, nil))
        #expect(try bind("9007199254740992.0") { $0.integer("F") } == (9_007_199_254_740_992, nil))
        #expect(try bind("null") { $0.integer("F") } == (nil, nil))
        for value in [
            "9223372036854775808", "9.223372036854775807e18", "-9223372036854775809", "-9.223372036854775808e18",
            "9007199254740994.0", "1e18", "18446744073709551616", "1e300",
            "1.5", "-0.5", "1e-7", "true", #""""#, #""1.5""#, #"" 1""#, #""9223372036854775808""#, #""١٢""#, "[1]",
            "{}",
        ] {
            let (number, problem) = try bind(value) { $0.integer("F") }
            #expect(number == nil && problem?.contains("F") == true, "\(value)")
        }
    }

    @Test func amountsAreStrictIntegersWithinTheLimit() throws {
        let limit = Funds.maximumAmount
        #expect(try bind("1000") { $0.amount("F") } == (1000, nil))
        #expect(try bind("-100") { $0.amount("F") } == (-100, nil))
        #expect(try bind(String(limit)) { $0.amount("F") } == (limit, nil))
        #expect(try bind(String(-limit)) { $0.amount("F") } == (-limit, nil))
        #expect(try bind("null") { $0.amount("F") } == (nil, nil))
        for value in Self.extremes + [
            String(limit + 1), String(-limit - 1), "1000.0", "1e3", #""1000""#, "true", "[1000]", #"{"Amount":1}"#,
        ] {
            let (amount, problem) = try bind(value) { $0.amount("F") }
            #expect(amount == nil && problem?.contains("minor units") == true, "\(value)")
        }
    }

    @Test func booleansTakeTrueFalseOneAndZero() throws {
        #expect(try bind("true") { $0.boolean("F") } == (true, nil))
        #expect(try bind("false") { $0.boolean("F") } == (false, nil))
        #expect(try bind("1") { $0.boolean("F") } == (true, nil))  // the Python SDK's BooleanField
        #expect(try bind("0") { $0.boolean("F") } == (false, nil))
        #expect(try bind("null") { $0.boolean("F") } == (nil, nil))
        for value in Self.extremes + ["2", "-1", "1.0", #""true""#, #""1""#, "[]", "{}"] {
            let (flag, problem) = try bind(value) { $0.boolean("F") }
            #expect(flag == nil && problem?.contains("F") == true, "\(value)")
        }
    }

    @Test func listsOfTextTakeStringsAndIntegers() throws {
        #expect(try bind(#"["a", 7]"#) { $0.strings("F") } == (["a", "7"], nil))
        #expect(try bind("[]") { $0.strings("F") } == ([], nil))
        for value in [#""a""#, "7", "[null]", "[1.5]", "[[]]", "[{}]", "{}"] {
            let (list, problem) = try bind(value) { $0.strings("F") }
            #expect(list == nil && problem != nil, "\(value)")
        }
    }

    @Test func nestedProblemsAreNamedByTheirPath() throws {
        var fields = try MangopayFields(
            body: Array(
                #"""
                {"DebitedFunds":{"Currency":"EUR","Amount":10.5},"Fees":{"Amount":null},
                 "Billing":{"FirstName":7,"Address":{"Country":["FR"],"City":"Paris"}},"BrowserInfo":{"ColorDepth":"x"},
                 "Shipping":3}
                """#.utf8))
        let request = fields.payInRequest()
        #expect(request.billing?.firstName == "7" && request.billing?.address?.city == "Paris")
        #expect(request.debitedFunds == nil && request.fees == nil && request.shipping == nil)
        #expect(
            Set(fields.errors.keys) == [
                "DebitedFunds.Amount", "Fees.Currency", "Fees.Amount", "Billing.Address.Country",
                "BrowserInfo.ColorDepth",
                "Shipping",
            ])
        #expect(throws: PaymentsError.self) { try fields.check() }
    }

    @Test func whatThePythonSDKSendsBindsWithoutProblems() throws {
        // A legal user as the SDK's suite builds it (CompanyNumber an int, BooleanField 1), and a pay-in body
        // with BrowserInfo booleans, the "+60" offset and a billing address with nulls.
        var legal = try MangopayFields(
            body: Array(
                #"""
                {"Name":"MatrixSampleOrg_PythonSDK","Email":"mail@test.com","LegalPersonType":"BUSINESS",
                 "LegalRepresentativeFirstName":"Mango","LegalRepresentativeLastName":"Pay","PersonType":"LEGAL",
                 "HeadquartersAddress":{"AddressLine1":"AddressLine1","AddressLine2":null,"PostalCode":"11222",
                 "City":"City","Region":null,"Country":"FR"},"LegalRepresentativeBirthday":1300186358,
                 "CompanyNumber":123456789,"TermsAndConditionsAccepted":1,"UserCategory":"OWNER","KYCLevel":"LIGHT",
                 "Id":null,"CreationDate":1700000000.0}
                """#.utf8))
        let user = legal.userFields(type: .legal, sca: false)
        #expect(legal.errors.isEmpty)
        #expect(user.companyNumber == "123456789" && user.termsAndConditionsAccepted == true)
        #expect(user.legalRepresentativeBirthday == 1_300_186_358 && user.headquartersAddress?.region == nil)

        var payIn = try MangopayFields(
            body: Array(
                #"""
                {"SecureMode":"DEFAULT","DebitedFunds":{"Currency":"EUR","Amount":1000},"Fees":{"Currency":"EUR","Amount":100},
                 "BrowserInfo":{"AcceptHeader":"text/html","JavaEnabled":true,"JavascriptEnabled":true,"Language":"FR-FR",
                 "ColorDepth":4,"ScreenHeight":1800,"ScreenWidth":400,"TimeZoneOffset":"+60","UserAgent":"UA"},
                 "Billing":{"FirstName":"John","LastName":"Doe","Address":{"AddressLine1":"l1","AddressLine2":null,
                 "PostalCode":"75001","City":"Paris","Region":null,"Country":"FR"}},"DebitedWalletId":"wlt_1"}
                """#.utf8))
        let request = payIn.payInRequest()
        #expect(payIn.errors.isEmpty)
        #expect(request.debitedFunds == Funds(currency: "EUR", amount: 1000))
        #expect(request.browserInfo?.timeZoneOffset == "+60" && request.browserInfo?.javaEnabled == true)
        var docs = try MangopayFields(body: Array(#"{"BrowserInfo":{"TimeZoneOffset":60}}"#.utf8))
        #expect(docs.payInRequest().browserInfo?.timeZoneOffset == "60" && docs.errors.isEmpty)
    }

    @Test func bodiesThatAreNoObjectNameTheBody() {
        for body in ["", "[", "[]", "7", "null", #""x""#, "{} {}", #"{"a":1e400}"#] {
            #expect(throws: PaymentsError.self, "\(body)") { try MangopayFields(body: Array(body.utf8)) }
        }
    }
}
