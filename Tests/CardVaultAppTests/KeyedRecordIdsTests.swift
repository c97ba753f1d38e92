import Configuration
import Foundation
import HTTPServer
import Testing
import VaultCore
import VaultCrypto

@testable import CardVaultApp
@testable import Checkout
@testable import Payments
@testable import VaultStore

/// Ids that are secrets or personal data (idempotency keys, checkout session, transaction and pairing ids, the
/// merchant's shopper ids, IP addresses in the risk history) never name a record: the store holds keyed hashes, and
/// records written by earlier builds under clear ids move to keyed ids at the sweeper's next round.
@Suite struct KeyedRecordIdsTests {
    /// Every record id of `store`, with its collection.
    static func allIds(_ store: InMemoryRecordStore) async throws -> [(String, String)] {
        var ids: [(String, String)] = []
        for collection in Collections.all {
            for record in try await store.scanAll(collection) { ids.append((collection, record.id)) }
        }
        return ids
    }

    @Test func hashesAreStableKeyedAndShapedAsDocumented() throws {
        let one = KeyedRecordIds(key: SymmetricKey(copying: [UInt8](repeating: 1, count: 32)))
        let other = KeyedRecordIds(key: SymmetricKey(copying: [UInt8](repeating: 2, count: 32)))
        let hashed = one.hashed("203.0.113.9", scope: "shop:ip")
        #expect(hashed == one.hashed("203.0.113.9", scope: "shop:ip"))
        #expect(hashed != other.hashed("203.0.113.9", scope: "shop:ip"))
        #expect(hashed != one.hashed("203.0.113.9", scope: "rival:ip"))
        #expect(KeyedRecordIds.isHashed(Substring(hashed)) && hashed.utf8.count == 33)
        #expect(!KeyedRecordIds.isHashed("fixture-key-0001"))
        #expect(one.scoped("shop", "key-1") == "shop:" + one.hashed("key-1", scope: "shop"))
        #expect(one.rekeyedScopedId("shop:key-1") == one.scoped("shop", "key-1"))
        #expect(one.rekeyedScopedId(one.scoped("shop", "key-1")) == nil)
        #expect(
            PayInRiskHistory.rekeyedId("shop:ip:2001:db8::1:000001700000:payin_x", recordIds: one)
                == "shop:ip:" + one.hashed("2001:db8::1", scope: "shop:ip") + ":000001700000:payin_x")
        #expect(PayInRiskHistory.rekeyedId("shop:user:user_1:000001700000:payin_x", recordIds: one) == nil)
    }

    /// The hosted checkout's flows (session, transaction, pairing, wallet, audit, shopper), an idempotent request
    /// and a card validation with an IP address: no record id holds any of those values.
    @Test func noRecordIdHoldsASecretOrPersonalValue() async throws {
        let h = try await MasterpassHarness.make()
        let callback = try await h.pay(
            ["userId": #""shopper-77""#, "suppressShippingAddress": "false"],
            form: MasterpassHarness.cardForm + "&shippingSameAsBilling=true&pairingConsent=true")
        let transactionId = try #require(queryItems(callback)["oauth_token"])
        let verifier = try #require(queryItems(callback)["pairing_verifier"])
        let path = "/masterpass/paymentdata/\(transactionId)?checkoutId=\(MasterpassHarness.checkoutId)&cartId=cart-1"
        #expect(await h.send("GET", path, as: "shop").status == 200)
        let pairing = await h.send(
            "GET", "/masterpass/pairingid?pairingTransactionId=\(verifier)&userId=shopper-77", as: "shop")
        let pairingId = try #require(pairing.jsonObject["pairingId"] as? String)
        #expect(await h.send("GET", "/masterpass/precheckoutdata/\(pairingId)", as: "shop").status == 200)
        _ = try await h.services.idempotency.begin(
            clientId: "shop", key: "secret-key-0000001", method: "POST", path: "/x", body: [])
        await #expect(throws: PaymentsError.self) {  // found under its keyed id: still running
            try await h.services.idempotency.begin(
                clientId: "shop", key: "secret-key-0000001", method: "POST", path: "/x", body: [])
        }

        let store = try #require(h.services.environment.store as? InMemoryRecordStore)
        // A card validation of the checkout's card from a known IP address (the risk history keeps one entry per
        // address).
        let cardRecord = try #require(try await store.scanAll(Collections.cards).first)
        let card = try RecordCoding.decode(Card.self, from: cardRecord)
        var validation = PayInRequest()
        validation.authorId = card.userId
        validation.cardId = card.id
        validation.secureModeReturnURL = "https://shop.example/return"
        validation.ipAddress = "203.0.113.77"
        validation.secureMode = "DEFAULT"
        validation.browserInfo = BrowserInfo(
            acceptHeader: "text/html", javaEnabled: false, javascriptEnabled: true, language: "fr", colorDepth: 24,
            screenHeight: 800, screenWidth: 1280, timeZoneOffset: "60", userAgent: "test")
        _ = try await h.services.payIns.create(clientId: "shop", request: validation, purpose: .cardValidation)
        let ids = try await Self.allIds(store)
        #expect(ids.contains { $0.0 == Collections.checkoutPairings })
        #expect(ids.contains { $0.0 == Collections.checkoutShoppers })
        #expect(ids.contains { $0.0 == Collections.riskAttempts && $0.1.contains(":ip:") })
        let secrets = [transactionId, verifier, pairingId, "shopper-77", "secret-key-0000001"]
        for (collection, id) in ids {
            for secret in secrets { #expect(!id.contains(secret), "\(collection) names a record by a secret") }
            #expect(!id.contains("127.0.0.1") && !id.contains("203.0.113."), "\(collection) names a record by an IP")
        }
    }

    /// The data directory written by 5a42ffc (clear idempotency keys and IP addresses in its record ids): one sweep
    /// moves them to keyed ids, the ledger still finds the idempotency key, and the risk history keeps its entries.
    @Test func sweepMovesRecordsOfEarlierBuildsToKeyedIds() async throws {
        let (data, keys, manifest) = try StoreFixtureTests.copyFixture()
        let store = try EncryptedFileStore.open(directory: data, keysDirectory: keys)
        defer { store.close() }
        let services = try StoreFixtureTests.services(store, manifest: manifest)
        let checkout = try CheckoutAssembly.checkoutService(
            services: services, configuration: .init(publicURL: "http://127.0.0.1:9999"))
        let key = "fixture-key-0001"
        let before = try StoreFixtureTests.allRecords(store)
        #expect(before.contains { $0.collection == Collections.idempotency && $0.id == manifest.clientId + ":" + key })
        let clearIP = before.filter { $0.collection.hasPrefix("risk-") && $0.id.contains(":ip:") }
        #expect(!clearIP.isEmpty)
        let entry = try #require(before.first { $0.collection == Collections.idempotency }?.value)

        let sweeper = RecordSweeper(
            store: store, clock: services.environment.clock,
            lifetimes: BackgroundServices.recordLifetimes(services: services, checkout: checkout))
        _ = try await sweeper.sweepRecords()

        let after = try StoreFixtureTests.allRecords(store)
        #expect(!after.contains { $0.id.contains(key) })
        let keyedId = try services.environment.recordIds.scoped(manifest.clientId, key)
        #expect(try store.read(Collections.idempotency, id: keyedId)?.value == entry)
        await #expect(throws: PaymentsError.self) {  // the ledger finds it: its request is a conflict, not new
            try await services.idempotency.begin(
                clientId: manifest.clientId, key: key, method: "POST", path: "/other", body: [])
        }
        let keyedIP = after.filter { $0.collection.hasPrefix("risk-") && $0.id.contains(":ip:") }
        #expect(keyedIP.count == clearIP.count)
        for record in keyedIP {
            let address = record.id.split(separator: ":")[2]
            #expect(KeyedRecordIds.isHashed(address), "\(record.collection) keeps a clear IP")
        }
        #expect(Set(keyedIP.map(\.value)) == Set(clearIP.map(\.value)))
    }
}
