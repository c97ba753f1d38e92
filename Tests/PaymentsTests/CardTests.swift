import Foundation
import Testing
import VaultCore
import VaultCrypto

@testable import Payments

@Suite struct CardTests {
    @Test func fingerprintsMatchWithinAClientAndDifferAcrossClients() async throws {
        let fixture = PaymentsFixture()
        let first = try await fixture.registeredCard("shop")
        let second = try await fixture.registeredCard("shop")
        let otherNumber = try await fixture.registeredCard("shop", number: PaymentsFixture.mastercard)
        let otherClient = try await fixture.registeredCard("other")
        #expect(first.fingerprint == second.fingerprint)
        #expect(first.fingerprint != otherNumber.fingerprint)
        #expect(first.fingerprint != otherClient.fingerprint)
        #expect(otherNumber.cardProvider == "MASTERCARD")

        let found = try await fixture.services.cards.list(
            clientId: "shop", fingerprint: first.fingerprint, page: PageRequest())
        #expect(Set(found.items.map(\.id)) == [first.id, second.id])
        let isolated = try await fixture.services.cards.list(
            clientId: "other", fingerprint: first.fingerprint, page: PageRequest())
        #expect(isolated.items.isEmpty)
        let malformed = try await fixture.services.cards.list(clientId: "shop", fingerprint: "zz", page: PageRequest())
        #expect(malformed.totalItems == 0)
    }

    @Test func deactivationIsIrreversible() async throws {
        let fixture = PaymentsFixture()
        let card = try await fixture.registeredCard()
        let unchanged = try await fixture.services.cards.update(clientId: "shop", id: card.id, active: true)
        #expect(unchanged.active)
        let off = try await fixture.services.cards.update(clientId: "shop", id: card.id, active: false)
        #expect(!off.active)
        #expect(!fixture.services.securityCodes.isHeld(clientId: "shop", cardId: card.id))
        let again = try await fixture.services.cards.update(clientId: "shop", id: card.id, active: false)
        #expect(!again.active)
        let reactivate = await PaymentsError.from {
            try await fixture.services.cards.update(clientId: "shop", id: card.id, active: true)
        }
        #expect(reactivate?.fieldErrors["Active"] != nil)
        #expect(!(try await fixture.services.cards.get(clientId: "shop", id: card.id).active))
    }

    @Test func cardsListByUserAndStayWithTheirClient() async throws {
        let fixture = PaymentsFixture()
        let card = try await fixture.registeredCard()
        let page = try await fixture.services.cards.list(clientId: "shop", userId: card.userId, page: PageRequest())
        #expect(page.items == [card])
        let hidden = await PaymentsError.from { try await fixture.services.cards.get(clientId: "other", id: card.id) }
        #expect(hidden?.code == .notFound)
        let vault = await PaymentsError.from {
            try await fixture.services.cards.vaultedNumber(clientId: "other", cardId: card.id)
        }
        #expect(vault?.code == .notFound)
        let noUser = await PaymentsError.from {
            try await fixture.services.cards.list(clientId: "other", userId: card.userId, page: PageRequest())
        }
        #expect(noUser?.code == .notFound)
    }

    @Test func notFoundTextNeverEchoesACardNumber() {
        let error = PaymentsError.notFound("Card", id: "4970107111111119")
        #expect(!(error.fieldErrors["RessourceNotFound"] ?? "").contains("4970107111111119"))
    }
}
