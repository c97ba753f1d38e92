import Foundation
import Testing
import VaultStore

@testable import Hooks
@testable import Payments

/// Events and outbox entries are binary records of one kind: an event's bytes read back as a delivery state with no
/// history, a delivery state keeps its history, and the JSON of earlier builds still opens.
@Suite struct EventRecordFormatTests {
    static let event = PaymentEvent(
        clientId: "shop", resourceId: "payin_1", eventType: .payInNormalSucceeded, date: 1_700_000_000,
        id: "shop:0001700000000000001:evt_x")

    @Test func anEventsBytesReadAsAFreshDeliveryState() throws {
        let bytes = try RecordCoding.encode(Self.event)
        #expect(RecordCoding.isBinary(bytes))
        let record = Record(collection: Collections.eventOutbox, id: Self.event.id, version: 1, value: bytes)
        let state = try RecordCoding.decode(HookDeliveryState.self, from: record)
        #expect(state == HookDeliveryState(event: Self.event))
        #expect(try RecordCoding.decode(PaymentEvent.self, from: record) == Self.event)
    }

    @Test func aDeliveryStateKeepsItsHistoryAndStillReadsAsItsEvent() throws {
        var state = HookDeliveryState(event: Self.event)
        state.failures = 3
        state.firstAttemptAt = 10
        state.nextAttemptAt = 70
        state.lastFailure = "status 500"
        let record = Record(
            collection: Collections.eventOutbox, id: Self.event.id, version: 2, value: try RecordCoding.encode(state))
        #expect(try RecordCoding.decode(HookDeliveryState.self, from: record) == state)
        #expect(try RecordCoding.decode(PaymentEvent.self, from: record) == Self.event)
    }

    @Test func jsonWrittenByEarlierBuildsStillOpens() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = Array(try encoder.encode(Self.event))
        let record = Record(collection: Collections.events, id: Self.event.id, version: 1, value: json)
        #expect(try RecordCoding.decode(PaymentEvent.self, from: record) == Self.event)
        #expect(try RecordCoding.decode(HookDeliveryState.self, from: record) == HookDeliveryState(event: Self.event))
        // Compaction moves the events forward; the outbox (Hooks' states) stays as written.
        let upgraded = try #require(StoredRecordFormat.upgrade(collection: Collections.events, value: json))
        #expect(RecordCoding.isBinary(upgraded))
        #expect(StoredRecordFormat.upgrade(collection: Collections.eventOutbox, value: json) == nil)
    }
}
