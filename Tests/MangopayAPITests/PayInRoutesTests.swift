import Foundation
import HTTPServer
import Testing
import VaultCore

@testable import MangopayAPI
@testable import Payments

/// Set-up steps of the pay-in route tests, over the in-process Mangopay harness.
extension MangopayHarness {
    /// A payer with a EUR wallet and a registered card; returns their ids and the card's profiling reference.
    func payerWithCard(
        number: String = "4970107111111119", userAgent: String = "Browser/1"
    ) async throws
        -> (user: String, wallet: String, card: String, reference: String)
    {
        let user = try await createUser()
        let wallet = await send(
            "POST", api("/wallets"), body: #"{"Currency":"EUR","Description":"W","Owners":[""# + user + #""]}"#)
        let card = try await registerCard(user: user, number: number, userAgent: userAgent)
        return (user, try #require(wallet.json["Id"]?.stringValue), card.card, card.reference)
    }

    /// Registers `number` for `user` through the registration, tokenization and update routes.
    func registerCard(
        user: String, number: String, userAgent: String = "Browser/1", cvx: String = "123"
    ) async throws
        -> (card: String, reference: String)
    {
        let registration = await send(
            "POST", api("/cardregistrations"), body: #"{"Currency":"EUR","UserId":""# + user + #""}"#)
        let tokenized = await tokenize(registration.json, number: number, cvx: cvx, headers: ["User-Agent": userAgent])
        let reference = try #require(tokenized.headers["Profiling-Attempt-Reference"])
        let id = try #require(registration.json["Id"]?.stringValue)
        let updated = await send(
            "PUT", api("/cardregistrations/\(id)"), body: #"{"RegistrationData":""# + tokenized.bodyText + #""}"#)
        return (try #require(updated.json["CardId"]?.stringValue), reference)
    }

    /// The request body the official SDK sends (captured), for this payer and card.
    static func payInBody(
        user: String, wallet: String, card: String, amount: Int64 = 1000, fees: Int64 = 100,
        secureMode: String = "DEFAULT",
        reference: String? = nil, returnURL: String = "https://shop.example/return?order=7#/done"
    ) -> String {
        let profiling = reference.map { #","ProfilingAttemptReference":""# + $0 + #"""# } ?? ""
        return #"{"SecureMode":""# + secureMode + #"","DebitedFunds":{"Currency":"EUR","Amount":\#(amount)},"#
            + #""Fees":{"Currency":"EUR","Amount":\#(fees)},"SecureModeReturnURL":""# + returnURL + #"","#
            + #""IpAddress":"2001:0620:0000:0000:0211:24FF:FE80:C12C","BrowserInfo":{"AcceptHeader":"text/html","#
            + #""JavaEnabled":true,"JavascriptEnabled":true,"Language":"FR-FR","ColorDepth":4,"ScreenHeight":1800,"#
            + #""ScreenWidth":400,"TimeZoneOffset":"+60","UserAgent":"UA"},"Billing":{"FirstName":"John","#
            + #""LastName":"Doe","Address":{"AddressLine1":"l1","AddressLine2":null,"PostalCode":"75001","City":"Paris","#
            + #""Region":null,"Country":"FR"}},"StatementDescriptor":"SHOP","Tag":"t","AuthorId":""# + user + #"","#
            + #""CreditedWalletId":""# + wallet + #"","CardId":""# + card + #"""# + profiling + "}"
    }

    func balance(_ wallet: String) async -> Int64? {
        await send("GET", api("/wallets/\(wallet)")).json["Balance"]?["Amount"]?.intValue
    }

    /// The path and query of an absolute URL on the harness's public base.
    static func local(_ url: String) -> String { String(url.dropFirst("http://127.0.0.1:9999".count)) }

    /// The `s` secret of a challenge URL.
    static func secret(_ url: String) -> String { String(url[url.range(of: "?s=")!.upperBound...]) }

    /// Posts the ACS form of `redirect` (an absolute URL) with these fields.
    func answerACS(
        _ redirect: String, code: String? = nil, action: String = "submit", secret: String? = nil
    ) async
        -> Response
    {
        let path = String(Self.local(redirect).prefix { $0 != "?" })
        var form = "s=" + (secret ?? Self.secret(redirect)) + "&action=" + action
        if let code { form += "&code=" + code }
        return await send(
            "POST", path, body: form, headers: ["Content-Type": "application/x-www-form-urlencoded"], authorized: false)
    }
}

@Suite struct PayInRoutesTests {
    /// Every field the reference lists for a direct card pay-in response (section 5).
    static let payInKeys: Set<String> = [
        "Id", "Tag", "CreationDate", "AuthorId", "CreditedUserId", "DebitedFunds", "CreditedFunds", "Fees", "Status",
        "ResultCode", "ResultMessage", "ExecutionDate", "Type", "Nature", "CreditedWalletId", "DebitedWalletId",
        "PaymentType", "ExecutionType", "SecureMode", "CardId", "SecureModeReturnURL", "SecureModeRedirectURL",
        "SecureModeNeeded", "Culture", "SecurityInfo", "StatementDescriptor", "BrowserInfo", "IpAddress", "Billing",
        "Shipping", "Requested3DSVersion", "Applied3DSVersion", "PreferredCardNetwork", "CardInfo", "PaymentCategory",
        "ProfilingAttemptReference",
    ]

    @Test func frictionlessPayInCarriesEveryWireFieldAndCreditsTheWallet() async throws {
        let harness = try await MangopayHarness.make()
        let (user, wallet, card, reference) = try await harness.payerWithCard()
        let body = MangopayHarness.payInBody(user: user, wallet: wallet, card: card, reference: reference)
        let created = await harness.send("POST", harness.api("/payins/card/direct"), body: body)
        #expect(created.status == .ok)
        let payIn = created.json
        #expect(Set(payIn.keys).isSuperset(of: Self.payInKeys))
        #expect(payIn["PaymentType"] == .string("CARD") && payIn["ExecutionType"] == .string("DIRECT"))
        #expect(payIn["Type"] == .string("PAYIN") && payIn["Nature"] == .string("REGULAR"))
        #expect(payIn["Status"] == .string("SUCCEEDED") && payIn["ResultCode"] == .string("000000"))
        #expect(payIn["ExecutionDate"]?.intValue != nil)
        #expect(payIn["DebitedFunds"] == .object([("Currency", .string("EUR")), ("Amount", .int(1000))]))
        #expect(payIn["CreditedFunds"] == .object([("Currency", .string("EUR")), ("Amount", .int(900))]))
        #expect(payIn["Fees"]?["Amount"] == .int(100))
        #expect(payIn["CreditedUserId"] == .string(user) && payIn["DebitedWalletId"] == .null)
        #expect(payIn["SecureModeNeeded"] == .bool(false) && payIn["SecureModeRedirectURL"] == .null)
        #expect(payIn["SecureMode"] == .string("DEFAULT"))
        #expect(payIn["SecurityInfo"] == .object([("AVSResult", .string("NO_CHECK"))]))
        #expect(
            Set(payIn["CardInfo"]?.keys ?? []) == [
                "BIN", "IssuingBank", "IssuerCountryCode", "Type", "Brand", "SubType",
            ])
        #expect(payIn["CardInfo"]?["BIN"] == .string("497010") && payIn["CardInfo"]?["Brand"] == .string("VISA"))
        #expect(
            Set(payIn["BrowserInfo"]?.keys ?? []) == [
                "AcceptHeader", "JavaEnabled", "JavascriptEnabled", "Language", "ColorDepth", "ScreenHeight",
                "ScreenWidth",
                "TimeZoneOffset", "UserAgent",
            ])
        #expect(payIn["BrowserInfo"]?["TimeZoneOffset"] == .string("+60"))
        #expect(
            Set(payIn["Billing"]?["Address"]?.keys ?? []) == [
                "AddressLine1", "AddressLine2", "City", "Region", "PostalCode", "Country",
            ])
        #expect(payIn["Shipping"] == .null && payIn["StatementDescriptor"] == .string("SHOP"))
        #expect(payIn["ProfilingAttemptReference"] == .string(reference))
        #expect(payIn["Applied3DSVersion"] == .string("V2_1"))
        #expect(!created.bodyText.contains("4970107111111119"))

        let id = try #require(payIn["Id"]?.stringValue)
        let read = await harness.send("GET", harness.api("/payins/\(id)"))
        #expect(read.status == .ok && read.json == payIn)
        #expect(await harness.balance(wallet) == 900)
        #expect(await harness.send("GET", harness.api("/cards/\(card)")).json["Validity"] == .string("VALID"))
        let transactions = await harness.send("GET", harness.api("/cards/\(card)/transactions"))
        #expect(transactions.json.arrayValue?.map { $0["Id"] } == [.string(id)])

        let attempt = await harness.send("GET", harness.api("/profiling/attempts/\(reference)"))
        let assessed = try #require(attempt.json["PayIns"]?.arrayValue)
        #expect(assessed.count == 1 && assessed.first?["TransactionId"] == .string(id))
        #expect(assessed.first?["Decision"] == .string("ALLOW"))
    }

    @Test func challengeRunsThroughTheACSPageAndReturnsWithTheTransactionId() async throws {
        let harness = try await MangopayHarness.make()
        let (user, wallet, card, _) = try await harness.payerWithCard(number: "4970105181818183")
        let created = await harness.send(
            "POST", harness.api("/payins/card/direct"),
            body: MangopayHarness.payInBody(user: user, wallet: wallet, card: card, amount: 1234, fees: 34))
        #expect(created.json["Status"] == .string("CREATED") && created.json["SecureModeNeeded"] == .bool(true))
        #expect(created.json["ResultCode"] == .null && created.json["ExecutionDate"] == .null)
        let id = try #require(created.json["Id"]?.stringValue)
        let redirect = try #require(created.json["SecureModeRedirectURL"]?.stringValue)
        #expect(redirect.hasPrefix("http://127.0.0.1:9999/acs/p/\(harness.clientId)/\(id)?s="))

        let page = await harness.send("GET", MangopayHarness.local(redirect), authorized: false)
        #expect(page.status == .ok)
        #expect(page.headers["Content-Type"] == "text/html; charset=utf-8")
        #expect(page.headers["Cache-Control"] == "no-store" && page.headers["Referrer-Policy"] == "no-referrer")
        #expect(page.headers["Content-Security-Policy"]?.contains("default-src 'none'") == true)
        let html = page.bodyText
        #expect(
            html.contains("12.34\u{00A0}EUR") && html.contains("497010XXXXXX8183") && !html.contains("4970105181818183")
        )
        #expect(
            html.contains(#"name="code""#) && html.contains(#"value="submit""#) && html.contains(#"value="cancel""#))
        #expect(!html.contains("<script"))
        #expect(await harness.balance(wallet) == 0)

        let answered = await harness.answerACS(redirect, code: "123456")
        #expect(answered.status.code == 303)
        #expect(answered.headers["Location"] == "https://shop.example/return?order=7&transactionId=\(id)#/done")
        #expect(answered.body.isEmpty)
        let final = await harness.send("GET", harness.api("/payins/\(id)"))
        #expect(final.json["Status"] == .string("SUCCEEDED") && final.json["ResultCode"] == .string("000000"))
        #expect(final.json["SecureModeNeeded"] == .bool(true))
        #expect(await harness.balance(wallet) == 1200)

        // A replayed return, or a second answer with another code, changes nothing and lands at the same place.
        let replay = await harness.answerACS(redirect, code: "999999")
        #expect(replay.status.code == 303 && replay.headers["Location"] == answered.headers["Location"])
        #expect(await harness.send("GET", harness.api("/payins/\(id)")).json["Status"] == .string("SUCCEEDED"))
        #expect(await harness.balance(wallet) == 1200)
        let after = await harness.send("GET", MangopayHarness.local(redirect), authorized: false)
        #expect(
            after.status == .ok && after.bodyText.contains("Authentication complete")
                && !after.bodyText.contains(#"name="code""#))
    }

    @Test(arguments: [("000000", "submit"), ("", "submit"), ("123456", "cancel")])
    func wrongCodeOrCancelFailsWith101301(code: String, action: String) async throws {
        let harness = try await MangopayHarness.make()
        let (user, wallet, card, _) = try await harness.payerWithCard()
        let created = await harness.send(
            "POST", harness.api("/payins/card/direct"),
            body: MangopayHarness.payInBody(user: user, wallet: wallet, card: card, secureMode: "FORCE"))
        let redirect = try #require(created.json["SecureModeRedirectURL"]?.stringValue)
        let answered = await harness.answerACS(redirect, code: code, action: action)
        #expect(answered.status.code == 303)
        let final = await harness.send("GET", harness.api("/payins/\(created.json["Id"]!.stringValue!)"))
        #expect(final.json["Status"] == .string("FAILED") && final.json["ResultCode"] == .string("101301"))
        #expect(final.json["ExecutionDate"] == .null)
        #expect(await harness.balance(wallet) == 0)
        #expect(await harness.send("GET", harness.api("/cards/\(card)")).json["Validity"] == .string("INVALID"))
    }

    @Test func abandonedChallengeExpiresWith101304OnReadAndOnTheSweep() async throws {
        let harness = try await MangopayHarness.make()
        let (user, wallet, card, _) = try await harness.payerWithCard(number: "4970105181818183")
        var ids: [String] = []
        var redirects: [String] = []
        for _ in 0..<2 {
            let created = await harness.send(
                "POST", harness.api("/payins/card/direct"),
                body: MangopayHarness.payInBody(user: user, wallet: wallet, card: card))
            ids.append(try #require(created.json["Id"]?.stringValue))
            redirects.append(try #require(created.json["SecureModeRedirectURL"]?.stringValue))
        }
        harness.clock.advance(by: 599)
        #expect(await harness.send("GET", harness.api("/payins/\(ids[0])")).json["Status"] == .string("CREATED"))
        harness.clock.advance(by: 1)
        let read = await harness.send("GET", harness.api("/payins/\(ids[0])"))
        #expect(read.json["Status"] == .string("FAILED") && read.json["ResultCode"] == .string("101304"))
        #expect(try await harness.services.payIns.expireDueChallenges() == 1)
        let swept = await harness.send("GET", harness.api("/payins/\(ids[1])"))
        #expect(swept.json["ResultCode"] == .string("101304"))
        // The right code after the window changes nothing.
        let late = await harness.answerACS(redirects[1], code: "123456")
        #expect(late.status.code == 303)
        #expect(await harness.send("GET", harness.api("/payins/\(ids[1])")).json["ResultCode"] == .string("101304"))
        #expect(await harness.balance(wallet) == 0)
    }

    @Test func acsLinksWithAWrongSecretKindOrIdAreNotFound() async throws {
        let harness = try await MangopayHarness.make()
        let (user, wallet, card, _) = try await harness.payerWithCard(number: "4970105181818183")
        let created = await harness.send(
            "POST", harness.api("/payins/card/direct"),
            body: MangopayHarness.payInBody(user: user, wallet: wallet, card: card))
        let redirect = try #require(created.json["SecureModeRedirectURL"]?.stringValue)
        let path = String(MangopayHarness.local(redirect).prefix { $0 != "?" })
        let secret = MangopayHarness.secret(redirect)
        let wrongSecret = String(secret.dropLast()) + (secret.hasSuffix("A") ? "B" : "A")
        for target in [
            path + "?s=" + wrongSecret, path,
            path.replacingOccurrences(of: "/acs/p/", with: "/acs/v/") + "?s=" + secret,
            path.replacingOccurrences(of: "/acs/p/", with: "/acs/x/") + "?s=" + secret,
            path.replacingOccurrences(of: harness.clientId, with: "other") + "?s=" + secret,
            path + "nope?s=" + secret, path + "?s=" + secret + "%3Cb%3E",
        ] {
            let page = await harness.send("GET", target, authorized: false)
            #expect(page.status.code == 404, "\(target)")
            #expect(
                page.bodyText.contains("not valid") && !page.bodyText.contains("<script")
                    && !page.bodyText.contains("<b>"), "\(target): \(page.bodyText)")
            #expect(page.headers["Content-Type"] == "text/html; charset=utf-8")
        }
        // Hostile path segments never come back in the answer.
        let hostile = await harness.send("GET", "/acs/p/%3Cscript%3E/%22onload%3D/x?s=%3Cb%3E", authorized: false)
        #expect(
            hostile.status.code == 404 && !hostile.bodyText.contains("<script") && !hostile.bodyText.contains("onload"))
        let wrong = await harness.answerACS(redirect, code: "123456", secret: wrongSecret)
        #expect(wrong.status.code == 404 && wrong.headers["Location"] == nil)
        let incomplete = await harness.send(
            "POST", path, body: "code=123456", headers: ["Content-Type": "application/x-www-form-urlencoded"],
            authorized: false)
        #expect(incomplete.status.code == 400 && incomplete.headers["Location"] == nil)
        // Nothing of that moved the pay-in.
        #expect(
            await harness.send("GET", harness.api("/payins/\(created.json["Id"]!.stringValue!)")).json["Status"]
                == .string("CREATED"))
    }

    @Test func challengePageEscapesEverythingItShows() {
        let view = ChallengeView(
            transactionId: #"payin_"><script>alert(1)</script>"#, amount: Funds(currency: "<EUR>", amount: 5),
            cardAlias: "497010XXXXXX1119'onmouseover='x", statementDescriptor: "A&B <i>", isFinal: false,
            status: "CREATED")
        let html = SandboxACSPage.challengeHTML(
            view, action: #"/acs/p/c/"><img src=x>"#, secret: #"s"><b>"#, challengeCode: "<123456>")
        #expect(!html.contains("<script") && !html.contains("<img") && !html.contains("<b>") && !html.contains("<i>"))
        #expect(!html.contains("'onmouseover='") && !html.contains("<EUR>") && !html.contains("<123456>"))
        #expect(
            html.contains("&lt;script&gt;") && html.contains("A&amp;B &lt;i&gt;") && html.contains("&quot;&gt;&lt;img"))
        #expect(html.contains("5 &lt;EUR&gt;"))
        let final = SandboxACSPage.challengeHTML(
            ChallengeView(
                transactionId: "p", amount: Funds(currency: "JPY", amount: 500), cardAlias: "a",
                statementDescriptor: nil, isFinal: true, status: "SUCCEEDED"),
            action: "/a", secret: "s", challengeCode: "1")
        #expect(
            final.contains("500\u{00A0}JPY") && final.contains("Your payment was confirmed.")
                && !final.contains("This payment is") && !final.contains(#"name="code""#))
    }

    @Test func challengedCardValidationMovesNoFundsAndSetsValidity() async throws {
        let harness = try await MangopayHarness.make()
        let (user, wallet, card, _) = try await harness.payerWithCard(number: "4970105181818183")
        let body =
            #"{"AuthorId":""# + user + #"","SecureModeReturnURL":"http://shop.example/v","IpAddress":"192.0.2.1","#
            + #""BrowserInfo":{"AcceptHeader":"text/html","JavaEnabled":false,"JavascriptEnabled":true,"Language":"en","#
            + #""ColorDepth":24,"ScreenHeight":800,"ScreenWidth":600,"TimeZoneOffset":60,"UserAgent":"UA"}}"#
        let created = await harness.send("POST", harness.api("/cards/\(card)/validation"), body: body)
        #expect(created.status == .ok)
        #expect(created.json["Type"] == .string("CARD_VALIDATION") && created.json["Validity"] == .string("UNKNOWN"))
        // The offset came as a number (as the Checkout SDKs send it) and is answered as one.
        #expect(
            created.json["Status"] == .string("CREATED")
                && created.json["BrowserInfo"]?["TimeZoneOffset"] == .int(60))
        let id = try #require(created.json["Id"]?.stringValue)
        let redirect = try #require(created.json["SecureModeRedirectURL"]?.stringValue)
        #expect(redirect.contains("/acs/v/"))
        let answered = await harness.answerACS(redirect, code: "123456")
        #expect(answered.headers["Location"] == "http://shop.example/v?transactionId=\(id)")
        let read = await harness.send("GET", harness.api("/cards/\(card)/validation/\(id)"))
        #expect(read.json["Status"] == .string("SUCCEEDED") && read.json["Validity"] == .string("VALID"))
        #expect(await harness.balance(wallet) == 0)
        #expect(await harness.send("GET", harness.api("/cards/\(card)")).json["Validity"] == .string("VALID"))
        // A validation is not a pay-in, and belongs to its card only.
        #expect(await harness.send("GET", harness.api("/payins/\(id)")).status.code == 404)
        let other = try await harness.registerCard(user: user, number: "4970107111111119")
        #expect(await harness.send("GET", harness.api("/cards/\(other.card)/validation/\(id)")).status.code == 404)
        #expect(await harness.send("GET", harness.api("/cards/\(card)/transactions")).json == .array([]))
        let missing = await harness.send("POST", harness.api("/cards/\(card)/validation"), body: "{}")
        #expect(missing.status.code == 400)
        let missingFields = Set(missing.json["errors"]?.keys ?? [])
        #expect(missingFields.isSuperset(of: ["AuthorId", "SecureModeReturnURL", "IpAddress", "BrowserInfo"]))
    }

    @Test func malformedBodiesAreParamErrorsNamingTheFields() async throws {
        let harness = try await MangopayHarness.make()
        let target = harness.api("/payins/card/direct")
        for body in ["", "{", "[1]", "null", "\"x\"", #"{"a":"\ud800"}"#, String(repeating: "[", count: 200)] {
            let response = await harness.send("POST", target, body: body)
            #expect(response.status.code == 400, "\(body.prefix(20))")
            #expect(response.json["Type"] == .string("param_error") && response.json["errors"]?["Body"] != nil)
            #expect(response.json.keys == ["Message", "Type", "Id", "Date", "errors"])
        }
        let missing = await harness.send("POST", target, body: "{}")
        #expect(missing.status.code == 400)
        #expect(
            Set(missing.json["errors"]?.keys ?? []) == [
                "AuthorId", "CardId", "CreditedWalletId", "DebitedFunds", "Fees", "SecureModeReturnURL", "IpAddress",
                "BrowserInfo",
            ])
        let wrongTypes = await harness.send(
            "POST", target,
            body: #"{"AuthorId":true,"CardId":["c"],"DebitedFunds":{"Currency":"EUR","Amount":"10"},"Fees":"x","#
                + #""BrowserInfo":{"JavaEnabled":"yes","ColorDepth":1.5,"TimeZoneOffset":true},"Billing":{"Address":3},"#
                + #""SecureMode":"ALWAYS","IpAddress":"999.1.1.1","SecureModeReturnURL":"javascript:alert(1)","Tag":{}}"#
        )
        #expect(wrongTypes.status.code == 400)
        let named = Set(wrongTypes.json["errors"]?.keys ?? [])
        for field in [
            "AuthorId", "CardId", "DebitedFunds.Amount", "Fees", "BrowserInfo.JavaEnabled", "BrowserInfo.ColorDepth",
            "BrowserInfo.TimeZoneOffset", "Billing.Address", "Tag",
        ] {
            #expect(named.contains(field), "\(field) in \(named)")
        }
        let refund = await harness.send("POST", harness.api("/payins/payin_x/refunds"), body: #"{"DebitedFunds":[1]}"#)
        #expect(refund.status.code == 400 && refund.json["errors"]?["DebitedFunds"] != nil)
        let validation = await harness.send("POST", harness.api("/cards/card_x/validation"), body: "[")
        #expect(validation.status.code == 400)
    }

    @Test func semanticChecksNameTheWrongField() async throws {
        let harness = try await MangopayHarness.make()
        let (user, wallet, card, _) = try await harness.payerWithCard()
        let target = harness.api("/payins/card/direct")
        func errors(_ body: String) async -> Set<String> {
            let response = await harness.send("POST", target, body: body)
            #expect(response.status.code == 400)
            return Set(response.json["errors"]?.keys ?? [])
        }
        let good = MangopayHarness.payInBody(user: user, wallet: wallet, card: card)
        #expect(
            await errors(good.replacingOccurrences(of: #""Amount":100}"#, with: #""Amount":1001}"#)) == ["Fees.Amount"])
        #expect(
            await errors(good.replacingOccurrences(of: #""Amount":1000}"#, with: #""Amount":0}"#)).contains(
                "DebitedFunds.Amount"))
        #expect(await errors(good.replacingOccurrences(of: "EUR", with: "GBP")) == ["DebitedFunds.Currency"])
        #expect(
            await errors(good.replacingOccurrences(of: "EUR", with: "XPX")).isSuperset(of: [
                "DebitedFunds.Currency", "Fees.Currency",
            ]))
        #expect(await errors(good.replacingOccurrences(of: card, with: "card_nope")) == ["CardId"])
        #expect(await errors(good.replacingOccurrences(of: wallet, with: "wlt_nope")) == ["CreditedWalletId"])
        #expect(
            await errors(good.replacingOccurrences(of: #""SHOP""#, with: #""SHOP_TOO_LONG!""#)) == [
                "StatementDescriptor"
            ])
        let stranger = try await harness.createUser()
        let strangerCard = try await harness.registerCard(user: stranger, number: "4970107111111119")
        #expect(await errors(good.replacingOccurrences(of: card, with: strangerCard.card)) == ["CardId"])
        _ = await harness.send("PUT", harness.api("/cards/\(card)"), body: #"{"Active":false}"#)
        #expect(await errors(good) == ["CardId"])
        // None of the refused requests moved money or made a pay-in.
        #expect(await harness.balance(wallet) == 0)
        #expect(await harness.send("GET", harness.api("/cards/\(card)/transactions")).json == .array([]))
    }

    @Test func mutatedBodiesNeverGiveAServerError() async throws {
        let harness = try await MangopayHarness.make()
        let (user, wallet, card, _) = try await harness.payerWithCard()
        let good = try MangopayJSON.parse(Array(MangopayHarness.payInBody(user: user, wallet: wallet, card: card).utf8))
        guard case .object(let members) = good else {
            Issue.record("not an object")
            return
        }
        let replacements: [MangopayJSON] = [
            .null, .bool(true), .int(-1), .int(Int64.max), .string(""), .string(String(repeating: "9", count: 300)),
            .array([]), .object([]), .object([("Currency", .int(1)), ("Amount", .string("1"))]),
        ]
        var statuses: [Int: Int] = [:]
        for index in members.indices {
            for replacement in replacements {
                var mutated = members
                mutated[index].1 = replacement
                let response = await harness.send(
                    "POST", harness.api("/payins/card/direct"), body: MangopayJSON.object(mutated).text)
                statuses[response.status.code, default: 0] += 1
                #expect(
                    response.status.code == 200 || response.status.code == 400,
                    "\(members[index].0) = \(replacement.text)")
                if response.status.code == 400 {
                    #expect(response.json["errors"]?.keys.isEmpty == false, "\(members[index].0) = \(replacement.text)")
                }
            }
        }
        #expect(statuses[400, default: 0] > statuses[200, default: 0])
    }

    @Test func idempotentPostsReplayAndNeverMoveMoneyTwice() async throws {
        let harness = try await MangopayHarness.make()
        let (user, wallet, card, _) = try await harness.payerWithCard()
        let body = MangopayHarness.payInBody(user: user, wallet: wallet, card: card)
        let key = "payin-0000-1111-2222-3333"
        let first = await harness.send(
            "POST", harness.api("/payins/card/direct"), body: body, headers: ["Idempotency-Key": key])
        let second = await harness.send(
            "POST", harness.api("/payins/card/direct"), body: body, headers: ["Idempotency-Key": key])
        #expect(first.status == .ok && second.body == first.body)
        #expect(await harness.balance(wallet) == 900)
        let conflict = await harness.send(
            "POST", harness.api("/payins/card/direct"),
            body: body.replacingOccurrences(of: #""Tag":"t""#, with: #""Tag":"u""#),
            headers: ["Idempotency-Key": key])
        #expect(conflict.status.code == 409 && conflict.json["Type"] == .string("idempotent_creation_conflict"))
        let stored = await harness.send("GET", harness.api("/responses/\(key)"))
        #expect(stored.json["Resource"]?["Id"] == first.json["Id"])

        let id = try #require(first.json["Id"]?.stringValue)
        let refundKey = "refund-0000-1111-2222-3333"
        let refundBody = #"{"DebitedFunds":{"Currency":"EUR","Amount":400},"Fees":{"Currency":"EUR","Amount":0}}"#
        let refund = await harness.send(
            "POST", harness.api("/payins/\(id)/refunds"), body: refundBody, headers: ["Idempotency-Key": refundKey])
        let again = await harness.send(
            "POST", harness.api("/payins/\(id)/refunds"), body: refundBody, headers: ["Idempotency-Key": refundKey])
        #expect(refund.status == .ok && again.body == refund.body)
        #expect(await harness.balance(wallet) == 500)
        #expect(await harness.send("GET", harness.api("/payins/\(id)/refunds")).json.arrayValue?.count == 1)

        let validationKey = "valid-0000-1111-2222-3333"
        let validationBody =
            #"{"AuthorId":""# + user
            + #"","SecureModeReturnURL":"https://s.example/","PaymentCategory":"TelephoneOrder"}"#
        let validation = await harness.send(
            "POST", harness.api("/cards/\(card)/validation"), body: validationBody,
            headers: ["Idempotency-Key": validationKey])
        let replayed = await harness.send(
            "POST", harness.api("/cards/\(card)/validation"), body: validationBody,
            headers: ["Idempotency-Key": validationKey])
        #expect(validation.status == .ok && replayed.body == validation.body)
    }

    @Test func refundsArePartialOrFullAndCarryTheirWireFields() async throws {
        let harness = try await MangopayHarness.make()
        let (user, wallet, card, _) = try await harness.payerWithCard()
        let created = await harness.send(
            "POST", harness.api("/payins/card/direct"),
            body: MangopayHarness.payInBody(user: user, wallet: wallet, card: card, amount: 2000, fees: 0))
        let id = try #require(created.json["Id"]?.stringValue)
        let partial = await harness.send(
            "POST", harness.api("/payins/\(id)/refunds"),
            body: #"{"AuthorId":""# + user
                + #"","DebitedFunds":{"Currency":"EUR","Amount":500},"Fees":{"Currency":"EUR","Amount":0},"Tag":"p"}"#)
        #expect(partial.status == .ok)
        #expect(partial.json["Type"] == .string("PAYOUT") && partial.json["Nature"] == .string("REFUND"))
        #expect(
            partial.json["InitialTransactionId"] == .string(id)
                && partial.json["InitialTransactionType"] == .string("PAYIN"))
        #expect(partial.json["Status"] == .string("SUCCEEDED") && partial.json["ResultCode"] == .string("000000"))
        #expect(partial.json["DebitedWalletId"] == .string(wallet) && partial.json["Tag"] == .string("p"))
        #expect(
            partial.json["DebitedFunds"]?["Amount"] == .int(500)
                && partial.json["CreditedFunds"]?["Amount"] == .int(500))
        #expect(await harness.balance(wallet) == 1500)
        let over = await harness.send(
            "POST", harness.api("/payins/\(id)/refunds"), body: #"{"DebitedFunds":{"Currency":"EUR","Amount":1501}}"#)
        #expect(over.status.code == 400 && over.json["errors"]?["DebitedFunds.Amount"] != nil)
        let full = await harness.send("POST", harness.api("/payins/\(id)/refunds"))
        #expect(full.json["DebitedFunds"]?["Amount"] == .int(1500) && full.json["Status"] == .string("SUCCEEDED"))
        #expect(await harness.balance(wallet) == 0)
        let nothingLeft = await harness.send("POST", harness.api("/payins/\(id)/refunds"))
        #expect(nothingLeft.status.code == 400)

        let list = await harness.send("GET", harness.api("/payins/\(id)/refunds"))
        #expect(list.json.arrayValue?.count == 2 && list.headers["X-Number-Of-Items"] == "2")
        let refundId = try #require(partial.json["Id"]?.stringValue)
        #expect(await harness.send("GET", harness.api("/refunds/\(refundId)")).json == partial.json)
        #expect(
            await harness.send("GET", harness.api("/refunds/refund_nope")).json["Type"]
                == .string("ressource_not_found"))
        #expect(await harness.send("GET", harness.api("/payins/payin_nope/refunds")).status.code == 404)
        #expect(await harness.send("GET", harness.api("/payins/\(id)/refunds?per_page=0")).status.code == 400)

        // Only a SUCCEEDED pay-in can be refunded.
        let forced = await harness.send(
            "POST", harness.api("/payins/card/direct"),
            body: MangopayHarness.payInBody(user: user, wallet: wallet, card: card, secureMode: "FORCE"))
        let pending = await harness.send("POST", harness.api("/payins/\(forced.json["Id"]!.stringValue!)/refunds"))
        #expect(pending.status.code == 400 && pending.json["Type"] == .string("param_error"))
    }

    @Test func fingerprintTransactionsListThePayInsOfEveryCardWithTheFingerprint() async throws {
        let harness = try await MangopayHarness.make()
        let (user, wallet, card, _) = try await harness.payerWithCard()
        let (otherUser, otherWallet, sameNumber, _) = try await harness.payerWithCard()
        let fingerprint = try #require(
            await harness.send("GET", harness.api("/cards/\(card)")).json["Fingerprint"]?.stringValue)
        #expect(
            await harness.send("GET", harness.api("/cards/\(sameNumber)")).json["Fingerprint"]?.stringValue
                == fingerprint)
        let target = harness.api("/cards/fingerprints/\(fingerprint)/transactions")
        #expect(await harness.send("GET", target).json.arrayValue?.count == 0)
        let first = await harness.send(
            "POST", harness.api("/payins/card/direct"),
            body: MangopayHarness.payInBody(user: user, wallet: wallet, card: card))
        let second = await harness.send(
            "POST", harness.api("/payins/card/direct"),
            body: MangopayHarness.payInBody(user: otherUser, wallet: otherWallet, card: sameNumber))
        // A validation is no transaction of the list.
        _ = await harness.send(
            "POST", harness.api("/cards/\(card)/validation"),
            body: #"{"AuthorId":""# + user
                + #"","SecureModeReturnURL":"https://s.example/","PaymentCategory":"TelephoneOrder"}"#)
        let list = await harness.send("GET", target)
        #expect(list.status == .ok && list.headers["X-Number-Of-Items"] == "2")
        #expect(
            Set(list.json.arrayValue?.compactMap { $0["Id"]?.stringValue } ?? []) == [
                try #require(first.json["Id"]?.stringValue), try #require(second.json["Id"]?.stringValue),
            ])
        #expect(
            await harness.send(
                "GET", harness.api("/cards/fingerprints/\(String(repeating: "0", count: 32))/transactions")
            )
            .json.arrayValue?.count == 0)
        #expect(await harness.send("GET", target + "?per_page=0").status.code == 400)
    }

    @Test func payInsAreIsolatedPerClientAndNeedAToken() async throws {
        let harness = try await MangopayHarness.make()
        let (user, wallet, card, _) = try await harness.payerWithCard()
        let created = await harness.send(
            "POST", harness.api("/payins/card/direct"),
            body: MangopayHarness.payInBody(user: user, wallet: wallet, card: card))
        let id = try #require(created.json["Id"]?.stringValue)
        #expect(await harness.send("GET", harness.api("/payins/\(id)"), authorized: false).status.code == 401)
        #expect(await harness.send("GET", "/v2.01/other/payins/\(id)").status.code == 403)
        let other = try await harness.services.clients.create(name: "other")
        let token = await harness.send(
            "POST", "/v2.01/oauth/token",
            headers: ["Authorization": "Basic " + Data("other:\(other.apiKey)".utf8).base64EncodedString()],
            authorized: false)
        let bearer = "Bearer " + (token.json["access_token"]?.stringValue ?? "")
        let foreign = await harness.send("GET", "/v2.01/other/payins/\(id)", headers: ["Authorization": bearer])
        #expect(foreign.status.code == 404 && foreign.json["Type"] == .string("ressource_not_found"))
        let foreignRefund = await harness.send(
            "POST", "/v2.01/other/payins/\(id)/refunds", headers: ["Authorization": bearer])
        #expect(foreignRefund.status.code == 404)
        #expect(await harness.balance(wallet) == 900)
    }

    @Test func manyCardsFromOneBrowserAreChallengedThenBlockedWithVisibleReasons() async throws {
        let harness = try await MangopayHarness.make()
        let (user, wallet, _, _) = try await harness.payerWithCard()
        let numbers = [
            "4970107111111119", "5555555555554444", "4111111111111111", "4012888888881881", "5105105105105100",
            "4000056655665556",
        ]
        var statuses: [String] = []
        var lastReference = ""
        for number in numbers {
            let (card, reference) = try await harness.registerCard(user: user, number: number, userAgent: "Attacker/1")
            let created = await harness.send(
                "POST", harness.api("/payins/card/direct"),
                body: MangopayHarness.payInBody(
                    user: user, wallet: wallet, card: card, amount: 500, fees: 0, reference: reference))
            statuses.append(
                (created.json["Status"]?.stringValue ?? "?") + "/" + (created.json["ResultCode"]?.stringValue ?? "-"))
            lastReference = reference
        }
        #expect(statuses.first == "SUCCEEDED/000000")
        #expect(statuses.contains("CREATED/-"))
        #expect(statuses.last == "FAILED/008500")
        let firstChallenge = try #require(statuses.firstIndex(of: "CREATED/-"))
        let firstBlock = try #require(statuses.firstIndex(of: "FAILED/008500"))
        #expect(firstChallenge < firstBlock)
        let attempt = await harness.send("GET", harness.api("/profiling/attempts/\(lastReference)"))
        let verdict = try #require(attempt.json["PayIns"]?.arrayValue?.first)
        #expect(verdict["Decision"] == .string("BLOCK"))
        let rules = verdict["Reasons"]?.arrayValue?.compactMap { $0["Rule"]?.stringValue } ?? []
        #expect(rules.contains("device.cards"))
        #expect((verdict["Score"]?.intValue ?? 0) >= 100)
    }
}
