import Foundation
import Testing
import VaultCore
import VaultStore

@testable import Payments

/// Every state change the merchant API makes writes its event (and, for a type with a hook, its outbox entry) with
/// it, once.
@Suite struct PaymentEventsTests {
    /// The events of `clientId` as (type, resource), oldest first, checking the outbox
    /// (``expectQueuedAsHooked(_:sourceLocation:)``).
    static func events(_ store: InMemoryRecordStore, clientId: String = "shop") async throws -> [(EventType, String)] {
        let records = try await store.scanAll(Collections.events, prefix: EventLog.idPrefix(clientId: clientId))
        try await expectQueuedAsHooked(store)
        return try records.map { record in
            let event = try RecordCoding.decode(PaymentEvent.self, from: record)
            return (event.eventType, event.resourceId)
        }
    }

    /// Checks that the outbox holds the same ids as the events whose client has a hook for their type, and no other
    /// (no delivery engine runs in these tests to take entries out).
    static func expectQueuedAsHooked(
        _ store: InMemoryRecordStore, sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) async throws {
        let hooked = Set(try await store.scanAll(Collections.hooksByEvent).map(\.id))
        let events = try await store.scanAll(Collections.events).map {
            try RecordCoding.decode(PaymentEvent.self, from: $0)
        }
        let expected = events.filter { hooked.contains(EventLog.hookKey(clientId: $0.clientId, type: $0.eventType)) }
        let outbox = try await store.scanAll(Collections.eventOutbox)
        #expect(Set(outbox.map(\.id)) == Set(expected.map(\.id)), sourceLocation: sourceLocation)
        #expect(outbox.count == expected.count, sourceLocation: sourceLocation)
    }

    /// Registers a hook for `type` as far as the events see one (its ``Collections/hooksByEvent`` entry).
    static func hook(_ type: EventType, clientId: String = "shop", in store: InMemoryRecordStore) async throws {
        try await store.commit([
            .put(
                collection: Collections.hooksByEvent, id: EventLog.hookKey(clientId: clientId, type: type),
                value: Array("hook_\(type.rawValue)".utf8), condition: .absent)
        ])
    }

    @Test func onlyEventsOfATypeWithAHookAreQueuedForDelivery() async throws {
        let f = try await PayInFixture()
        try await Self.hook(.payInNormalSucceeded, in: f.base.store)
        try await Self.hook(.cardRegistrationValidated, clientId: "other", in: f.base.store)
        let (card, _) = try await f.card()
        let payIn = try await f.payIns.create(clientId: "shop", request: f.request(card: card, fees: 0))
        let events = try await Self.events(f.base.store)
        #expect(Self.names(events, for: payIn.id) == ["PAYIN_NORMAL_CREATED", "PAYIN_NORMAL_SUCCEEDED"])
        #expect(Self.names(events, for: card.cardRegistrationId).count == 2)
        // One entry: shop's SUCCEEDED (the other client's hook is not shop's), with the event's own bytes.
        let outbox = try await f.base.store.scanAll(Collections.eventOutbox)
        let queued = try outbox.map { try RecordCoding.decode(PaymentEvent.self, from: $0) }
        #expect(queued.map(\.eventType) == [.payInNormalSucceeded] && queued.map(\.resourceId) == [payIn.id])
        let listed = try #require(try await f.base.store.get(Collections.events, id: outbox[0].id))
        #expect(listed.value == outbox[0].value)
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
