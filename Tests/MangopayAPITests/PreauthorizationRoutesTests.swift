import Foundation
import HTTPServer
import Testing
import VaultCore

@testable import MangopayAPI
@testable import Payments

/// The preauthorization and deposit routes over the in-process harness: the wire fields, the SDK's URL spellings,
/// captures, cancellation, and the answers for wrong requests.
@Suite struct PreauthorizationRoutesTests {
    /// The body the SDK sends for a hold: a pay-in's without wallet and fees.
    static func holdBody(user: String, card: String, amount: Int64) -> String {
        #"{"AuthorId":""# + user + #"","CardId":""# + card
            + #"","DebitedFunds":{"Currency":"EUR","Amount":\#(amount)},"#
            + #""SecureMode":"DEFAULT","SecureModeReturnURL":"https://shop.example/back","IpAddress":"192.0.2.44","#
            + #""BrowserInfo":{"AcceptHeader":"text/html","JavaEnabled":1,"JavascriptEnabled":1,"Language":"fr","#
            + #""ColorDepth":24,"ScreenHeight":800,"ScreenWidth":1200,"TimeZoneOffset":"+60","UserAgent":"UA"},"#
            + #""RemainingFunds":null,"PaymentStatus":null,"Tag":"room"}"#
    }

    static func captureBody(user: String, wallet: String, field: String, id: String, amount: Int64?) -> String {
        let funds = amount.map {
            #","DebitedFunds":{"Currency":"EUR","Amount":\#($0)},"Fees":{"Currency":"EUR","Amount":0}"#
        }
        return #"{"AuthorId":""# + user + #"","CreditedWalletId":""# + wallet + #"",""# + field + #"":""# + id + #"""#
            + (funds ?? "") + "}"
    }

    @Test func aPreauthorizationIsCreatedCapturedAndShownOnTheWire() async throws {
        let h = try await MangopayHarness.make()
        let (user, wallet, card, _) = try await h.payerWithCard()
        let created = await h.send(
            "POST", h.api("/preauthorizations/card/direct"), body: Self.holdBody(user: user, card: card, amount: 2500))
        #expect(created.status == .ok)
        let hold = created.json
        let id = try #require(hold["Id"]?.stringValue)
        #expect(hold["Status"]?.stringValue == "SUCCEEDED" && hold["PaymentStatus"]?.stringValue == "WAITING")
        #expect(hold["RemainingFunds"]?["Amount"]?.intValue == 2500 && hold["PayInId"] == .null)
        #expect(hold["ExecutionType"]?.stringValue == "DIRECT" && hold["Tag"]?.stringValue == "room")
        let creation = try #require(hold["CreationDate"]?.intValue)
        #expect(hold["ExpirationDate"]?.intValue == creation + 7 * 86_400)

        let captured = await h.send(
            "POST", h.api("/payins/PreAuthorized/direct"),
            body: Self.captureBody(user: user, wallet: wallet, field: "PreauthorizationId", id: id, amount: 1000))
        #expect(captured.status == .ok)
        let payInId = try #require(captured.json["Id"]?.stringValue)
        let payIn = await h.send("GET", h.api("/payins/\(payInId)")).json
        #expect(payIn["PaymentType"]?.stringValue == "PREAUTHORIZED" && payIn["PreauthorizationId"]?.stringValue == id)
        #expect(payIn["Status"]?.stringValue == "SUCCEEDED")
        #expect(await h.balance(wallet) == 1000)

        let after = await h.send("GET", h.api("/preauthorizations/\(id)")).json
        #expect(after["PaymentStatus"]?.stringValue == "VALIDATED" && after["PayInId"]?.stringValue == payInId)
        #expect(after["RemainingFunds"]?["Amount"]?.intValue == 1500)
        let transactions = await h.send("GET", h.api("/preauthorizations/\(id)/transactions"))
        #expect(transactions.json.arrayValue?.compactMap { $0["Id"]?.stringValue } == [payInId])
        #expect(transactions.headers["X-Number-Of-Items"] == "1")
        let listed = await h.send("GET", h.api("/cards/\(card)/preauthorizations"))
        #expect(listed.json.arrayValue?.compactMap { $0["Id"]?.stringValue } == [id])
        #expect(await h.send("GET", h.api("/users/\(user)/preauthorizations")).json.arrayValue?.count == 1)
    }

    @Test func cancellationTakesOnlyCanceledAndWrongRequestsAreNamed() async throws {
        let h = try await MangopayHarness.make()
        let (user, wallet, card, _) = try await h.payerWithCard()
        let id = try #require(
            await h.send(
                "POST", h.api("/preauthorizations/card/direct"),
                body: Self.holdBody(user: user, card: card, amount: 900)
            ).json["Id"]?.stringValue)
        let wrong = await h.send("PUT", h.api("/preauthorizations/\(id)"), body: #"{"PaymentStatus":"VALIDATED"}"#)
        #expect(wrong.status == .badRequest && wrong.json["errors"]?["PaymentStatus"] != nil)
        let canceled = await h.send(
            "PUT", h.api("/preauthorizations/\(id)"), body: #"{"PaymentStatus":"CANCELED","Tag":"x"}"#)
        #expect(canceled.status == .ok && canceled.json["PaymentStatus"]?.stringValue == "CANCELED")
        let late = await h.send(
            "POST", h.api("/payins/PreAuthorized/direct"),
            body: Self.captureBody(user: user, wallet: wallet, field: "PreauthorizationId", id: id, amount: 900))
        #expect(late.status == .badRequest && late.json["errors"]?["PaymentStatus"] == nil)
        #expect(late.json["errors"]?["PreauthorizationId"] != nil)
        let missing = await h.send(
            "POST", h.api("/payins/PreAuthorized/direct"), body: #"{"AuthorId":""# + user + #""}"#)
        #expect(missing.status == .badRequest)
        #expect(missing.json["errors"]?["CreditedWalletId"] != nil && missing.json["errors"]?["DebitedFunds"] != nil)
        let unknown = await h.send("GET", h.api("/preauthorizations/preauth_unknown"))
        #expect(unknown.status == .notFound && unknown.json["Type"]?.stringValue == "ressource_not_found")
        #expect(await h.balance(wallet) == 0)
    }

    @Test func depositsAnswerTheSDKsSpellingsAndCaptureInFull() async throws {
        let h = try await MangopayHarness.make()
        let (user, wallet, card, _) = try await h.payerWithCard()
        let created = await h.send(
            "POST", h.api("/deposit-preauthorizations/card/direct"),
            body: Self.holdBody(user: user, card: card, amount: 4000))
        let id = try #require(created.json["Id"]?.stringValue)
        #expect(created.json["PayinsLinked"]?["PayinCaptureId"] == .null)
        let creation = try #require(created.json["CreationDate"]?.intValue)
        #expect(created.json["ExpirationDate"]?.intValue == creation + 30 * 86_400)
        #expect(await h.send("GET", h.api("/deposit-preauthorizations//\(id)")).status == .ok)
        #expect(await h.send("GET", h.api("/users/\(user)/deposit-preauthorizations/")).json.arrayValue?.count == 1)
        #expect(await h.send("GET", h.api("/cards/\(card)/deposit-preauthorizations/")).json.arrayValue?.count == 1)
        #expect(await h.send("GET", h.api("/cards/\(card)/preauthorizations")).json.arrayValue?.count == 0)

        let captured = await h.send(
            "POST", h.api("/payins/deposit-preauthorized/direct/full-capture"),
            body: Self.captureBody(user: user, wallet: wallet, field: "DepositId", id: id, amount: nil))
        #expect(captured.status == .ok && captured.json["DepositId"]?.stringValue == id)
        let payInId = try #require(captured.json["Id"]?.stringValue)
        #expect(await h.balance(wallet) == 4000)
        let after = await h.send("GET", h.api("/deposit-preauthorizations/\(id)")).json
        #expect(after["PaymentStatus"]?.stringValue == "VALIDATED")
        #expect(after["PayinsLinked"]?["PayinCaptureId"]?.stringValue == payInId)
        let again = await h.send(
            "POST", h.api("/payins/deposit-preauthorized/direct/full-capture"),
            body: Self.captureBody(user: user, wallet: wallet, field: "DepositId", id: id, amount: nil))
        #expect(again.status == .badRequest)
        #expect(await h.balance(wallet) == 4000)
    }
}
