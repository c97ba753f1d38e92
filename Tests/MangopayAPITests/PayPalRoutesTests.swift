import Foundation
import HTTPServer
import Testing

@testable import MangopayAPI
@testable import Payments

/// PayPal pay-ins over the in-process router: the binding of `LineItems` and its sum rule (400 naming the field),
/// the answer's PayPal members, and the approval page from link to redirect.
@Suite struct PayPalRoutesTests {
    static func body(user: String, wallet: String, amount: Int64, items: String) -> String {
        #"{"AuthorId":""# + user + #"","CreditedWalletId":""# + wallet + #"","#
            + #""DebitedFunds":{"Currency":"EUR","Amount":\#(amount)},"Fees":{"Currency":"EUR","Amount":100},"#
            + #""ReturnURL":"https://shop.example/paid","CancelURL":"https://shop.example/cancelled","#
            + #""ShippingPreference":"NO_SHIPPING","Reference":"r-1","LineItems":"# + items + "}"
    }

    static let shoes = #"[{"Name":"<i>Shoes</i>","Quantity":2,"UnitAmount":400,"TaxAmount":100}]"#

    @Test func lineItemsAreBoundAndMustSumToTheDebitedFunds() async throws {
        let harness = try await MangopayHarness.make()
        let (user, wallet, _, _) = try await harness.payerWithCard()
        let path = harness.api("/payins/payment-methods/paypal")
        let short = await harness.send(
            "POST", path, body: Self.body(user: user, wallet: wallet, amount: 1000, items: Self.shoes))
        #expect(short.status == .badRequest)
        #expect(short.json["errors"]?["LineItems"]?.stringValue?.contains("(900) must equal") == true)
        let wrongType = await harness.send(
            "POST", path,
            body: Self.body(
                user: user, wallet: wallet, amount: 900, items: #"[{"Name":"A","Quantity":"two","UnitAmount":1.5}]"#))
        #expect(wrongType.json["errors"]?["LineItems[0].Quantity"] != nil)
        #expect(wrongType.json["errors"]?["LineItems[0].UnitAmount"] != nil)
        let notAList = await harness.send(
            "POST", path, body: Self.body(user: user, wallet: wallet, amount: 900, items: "7"))
        #expect(notAList.json["errors"]?["LineItems"] != nil)
        #expect(await harness.balance(wallet) == 0)
    }

    @Test func approvalPageApprovesAndRedirectsToReturnURL() async throws {
        let harness = try await MangopayHarness.make()
        let (user, wallet, _, _) = try await harness.payerWithCard()
        let created = await harness.send(
            "POST", harness.api("/payins/payment-methods/paypal"),
            body: Self.body(user: user, wallet: wallet, amount: 900, items: Self.shoes))
        #expect(created.status == .ok)
        #expect(
            created.json["PaymentType"]?.stringValue == "PAYPAL" && created.json["ExecutionType"]?.stringValue == "WEB")
        #expect(created.json["Status"]?.stringValue == "CREATED" && created.json["PaypalPayerID"] == .null)
        let id = try #require(created.json["Id"]?.stringValue)
        let redirect = try #require(created.json["RedirectURL"]?.stringValue)
        let page = await harness.send("GET", MangopayHarness.local(redirect), authorized: false)
        #expect(page.status == .ok)
        let html = String(decoding: page.body, as: UTF8.self)
        #expect(html.contains("&lt;i&gt;Shoes&lt;/i&gt;") && !html.contains("<i>Shoes</i>"))
        #expect(html.contains("9.00\u{00A0}EUR") && html.contains("John Doe"))
        let wrong = await harness.send(
            "GET", String(MangopayHarness.local(redirect).prefix { $0 != "?" }) + "?s=nope", authorized: false)
        #expect(wrong.status == .notFound)

        let answered = await harness.send(
            "POST", String(MangopayHarness.local(redirect).prefix { $0 != "?" }),
            body: "s=" + MangopayHarness.secret(redirect) + "&action=approve",
            headers: ["Content-Type": "application/x-www-form-urlencoded"], authorized: false)
        #expect(answered.status == HTTPStatus(303))
        #expect(answered.headers["Location"] == "https://shop.example/paid?transactionId=" + id)
        let read = await harness.send("GET", harness.api("/payins/" + id))
        #expect(read.json["Status"]?.stringValue == "SUCCEEDED" && read.json["PaypalPayerID"]?.stringValue != nil)
        #expect(read.json["BuyerFirstname"]?.stringValue == "John")
        #expect(read.json["ReturnURL"]?.stringValue == "https://shop.example/paid?transactionId=" + id)
        #expect(await harness.balance(wallet) == 800)
    }
}
