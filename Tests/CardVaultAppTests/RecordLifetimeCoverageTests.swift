import Configuration
import Foundation
import HTTPServer
import Testing
import VaultStore

@testable import CardVaultApp
@testable import Checkout
@testable import Payments

/// Every collection the daemon writes has a lifetime in the sweeper: after the hosted checkout's flows (which run
/// through the merchant API's users, card registrations, vault, cards, profiling, validations and risk history),
/// the store holds no collection the sweeper does not know.
@Suite struct RecordLifetimeCoverageTests {
    @Test func everyWrittenCollectionHasALifetime() async throws {
        let h = try await MasterpassHarness.make()
        let callback = try await h.pay(
            ["userId": #""shopper-1""#, "suppressShippingAddress": "false"],
            form: MasterpassHarness.cardForm + "&shippingSameAsBilling=true&pairingConsent=true")
        let transactionId = try #require(queryItems(callback)["oauth_token"])
        let verifier = try #require(queryItems(callback)["pairing_verifier"])
        let path = "/masterpass/paymentdata/\(transactionId)?checkoutId=\(MasterpassHarness.checkoutId)&cartId=cart-1"
        #expect(await h.send("GET", path, as: "shop").status == 200)
        let pairing = await h.send(
            "GET", "/masterpass/pairingid?pairingTransactionId=\(verifier)&userId=shopper-1", as: "shop")
        let pairingId = try #require(pairing.jsonObject["pairingId"] as? String)
        #expect(await h.send("GET", "/masterpass/precheckoutdata/\(pairingId)", as: "shop").status == 200)
        _ = try await h.services.idempotency.begin(
            clientId: "shop", key: "coverage-key-00001", method: "POST", path: "/x", body: [])

        let store = try #require(h.services.environment.store as? InMemoryRecordStore)
        let checkout = try CheckoutAssembly.checkoutService(
            services: h.services, configuration: .init(publicURL: "http://127.0.0.1:9999"))
        let known = Set(BackgroundServices.recordLifetimes(services: h.services, checkout: checkout).map(\.collection))
        let written = store.collectionNames
        #expect(written.count >= 15)
        #expect(
            written.subtracting(known).isEmpty, "collections without a lifetime: \(written.subtracting(known).sorted())"
        )
        // And every collection the code declares.
        #expect(Set(Collections.all).subtracting(known).isEmpty, "\(Set(Collections.all).subtracting(known).sorted())")
        let names = BackgroundServices.recordLifetimes(services: h.services, checkout: checkout).map(\.collection)
        #expect(Set(names).count == names.count)
    }
}
