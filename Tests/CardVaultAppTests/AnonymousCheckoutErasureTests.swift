import Configuration
import Foundation
import HTTPServer
import Testing
import VaultCore
import VaultStore

@testable import CardVaultApp
@testable import Checkout
@testable import Payments

/// A hosted checkout without the merchant's `userId` vaults its card for a shopper of its own. When the checkout
/// ends (its payment data expired), that shopper is closed: the card number leaves the store and the card is
/// deactivated (PCI DSS 3.2.1: kept only as long as needed). A merchant's own user keeps their cards.
@Suite struct AnonymousCheckoutErasureTests {
    @Test func theCardOfAnAnonymousCheckoutIsErasedWhenItEnds() async throws {
        let h = try await MasterpassHarness.make()
        _ = try await h.pay()
        let store = try #require(h.services.environment.store as? InMemoryRecordStore)
        let clock = try #require(h.services.environment.clock as? ManualClock)
        let cardRecord = try #require(try await store.scanAll(Collections.cards).first)
        let card = try RecordCoding.decode(Card.self, from: cardRecord)
        let vaulted = Identifier.scoped("shop", card.id)
        #expect(try await store.get(Collections.vault, id: vaulted) != nil)
        #expect(try await store.scanAll(Collections.checkoutShoppers).count == 1)

        let checkout = try CheckoutAssembly.checkoutService(
            services: h.services, configuration: .init(publicURL: "http://127.0.0.1:9999"))
        let sweeper = RecordSweeper(
            store: store, clock: clock,
            lifetimes: BackgroundServices.recordLifetimes(services: h.services, checkout: checkout))
        _ = try await sweeper.sweepRecords()
        #expect(try await store.get(Collections.vault, id: vaulted) != nil, "still needed before the end")

        clock.advance(by: 2 * 3600)
        _ = try await sweeper.sweepRecords()
        #expect(try await store.get(Collections.vault, id: vaulted) == nil)
        #expect(try await h.services.cards.get(clientId: "shop", id: card.id).active == false)
        #expect(try await store.scanAll(Collections.checkoutShoppers).isEmpty)
        #expect(try await h.services.users.get(clientId: "shop", id: card.userId).closedAt != nil)
    }
}
