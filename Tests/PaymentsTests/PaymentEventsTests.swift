import Foundation
import Testing
import VaultCore
import VaultStore

@testable import Payments

/// Every state change the merchant API makes writes its event (and outbox entry) with it, once.
@Suite struct PaymentEventsTests {
    /// The events of `clientId` as (type, resource), oldest first, checking each has its outbox twin.
    static func events(_ store: InMemoryRecordStore, clientId: String = "shop") async throws -> [(EventType, String)] {
        let records = try await store.scanAll(Collections.events, prefix: EventLog.idPrefix(clientId: clientId))
        let outbox = Set(try await store.scanAll(Collections.eventOutbox).map(\.id))
        #expect(Set(records.map(\.id)).isSubset(of: outbox))
        return try records.map { record in
            let event = try RecordCoding.decode(PaymentEvent.self, from: record)
            return (event.eventType, event.resourceId)
        }
    }

    static func names(_ events: [(EventType, String)], for resource: String) -> [String] {
        events.filter { $0.1 == resource }.map(\.0.rawValue)
    }

    @Test func usersRegistrationsPayInsAndRefundsEachWriteTheirEvents() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card()
        let payIn = try await f.payIns.create(clientId: "shop", request: f.request(card: card, fees: 0))
        let refund = try await f.payIns.refund(
            clientId: "shop", payInId: payIn.id,
            request: RefundRequest(debitedFunds: Funds(currency: "EUR", amount: 100)))
        let events = try await Self.events(f.base.store)
        #expect(Self.names(events, for: f.payer.id) == ["USER_NATURAL_CREATED"])
        let registrationId = card.cardRegistrationId
        #expect(
            Self.names(events, for: registrationId) == ["CARD_REGISTRATION_CREATED", "CARD_REGISTRATION_VALIDATED"])
        #expect(Self.names(events, for: payIn.id) == ["PAYIN_NORMAL_CREATED", "PAYIN_NORMAL_SUCCEEDED"])
        #expect(Self.names(events, for: refund.id) == ["PAYIN_REFUND_CREATED", "PAYIN_REFUND_SUCCEEDED"])
    }

    @Test func aChallengeAnsweredTwiceReportsItsOutcomeOnce() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card(PayInFixture.challenged)
        let created = try await f.payIns.create(clientId: "shop", request: f.request(card: card))
        #expect(Self.names(try await Self.events(f.base.store), for: created.id) == ["PAYIN_NORMAL_CREATED"])
        let url = try #require(f.payIns.challengeURL(for: created))
        for code in ["123456", "000000"] {
            _ = try await f.payIns.answerChallenge(
                kind: "p", clientId: "shop", id: created.id, secret: PayInFixture.secret(url), code: code)
        }
        #expect(
            Self.names(try await Self.events(f.base.store), for: created.id) == [
                "PAYIN_NORMAL_CREATED", "PAYIN_NORMAL_SUCCEEDED",
            ])
    }

    @Test func failedValidationsRefundsAndRegistrationsReportFailure() async throws {
        let f = try await PayInFixture()
        let (card, _) = try await f.card(PayInFixture.challenged)
        var request = f.request(card: card)
        request.creditedWalletId = nil
        let validation = try await f.payIns.create(clientId: "shop", request: request, purpose: .cardValidation)
        let url = try #require(f.payIns.challengeURL(for: validation))
        _ = try await f.payIns.answerChallenge(
            kind: "v", clientId: "shop", id: validation.id, secret: PayInFixture.secret(url), code: nil)
        #expect(
            Self.names(try await Self.events(f.base.store), for: validation.id) == [
                "CARD_VALIDATION_CREATED", "CARD_VALIDATION_FAILED",
            ])

        let registration = try await f.base.services.cardRegistrations.create(
            clientId: "shop", userId: f.payer.id, currency: "EUR", cardType: nil, tag: nil)
        _ = try await f.base.services.cardRegistrations.update(
            clientId: "shop", id: registration.id, registrationData: "errorCode=02625", cardHolderName: nil, tag: nil)
        #expect(
            Self.names(try await Self.events(f.base.store), for: registration.id) == [
                "CARD_REGISTRATION_CREATED", "CARD_REGISTRATION_ERROR",
            ])
    }

    @Test func aChangeThatDoesNotCommitWritesNoEvent() async throws {
        let f = try await PayInFixture()
        var request = f.request(card: try await f.card().0)
        let before = try await Self.events(f.base.store).count
        request.creditedWalletId = "wallet_missing"
        await #expect(throws: PaymentsError.self) { _ = try await f.payIns.create(clientId: "shop", request: request) }
        #expect(try await Self.events(f.base.store).count == before)
    }
}
