public import Payments

/// A merchant's hook: the URL that `GET`s are sent to for one `EventType` of one client (Mangopay's `Hook`, the
/// SDK's `Notification`). One per event type per client.
public struct Hook: Sendable, Equatable, Codable {
    /// Whether the merchant wants deliveries.
    public enum Status: String, Sendable, Codable, CaseIterable {
        case enabled = "ENABLED"
        case disabled = "DISABLED"
    }

    /// Whether deliveries reach the URL: INVALID once one event failed for the whole retry schedule (3 days);
    /// the operator's `cardvault hooks retry` makes it VALID again.
    public enum Validity: String, Sendable, Codable {
        case valid = "VALID"
        case invalid = "INVALID"
    }

    public var id: String
    public var clientId: String
    public var eventType: EventType
    public var url: String
    public var status: Status
    public var validity: Validity
    public var tag: String?
    public var creationDate: Int64

    public init(
        id: String, clientId: String, eventType: EventType, url: String, status: Status, validity: Validity,
        tag: String?, creationDate: Int64
    ) {
        self.id = id
        self.clientId = clientId
        self.eventType = eventType
        self.url = url
        self.status = status
        self.validity = validity
        self.tag = tag
        self.creationDate = creationDate
    }
}

/// An event on its way to a hook: the event itself (the fields of ``PaymentEvent``, as the outbox entry holds it)
/// and how its delivery went so far. Stored in ``Collections/eventOutbox`` (and, when given up, in
/// ``Collections/hookFailures``) under the event's id.
public struct HookDeliveryState: Sendable, Equatable, Codable {
    public var clientId: String
    public var resourceId: String
    public var eventType: EventType
    public var date: Int64
    public var id: String
    /// Failed attempts so far (nil: none yet).
    public var failures: Int?
    /// Unix seconds of the first attempt; the retry schedule counts from it.
    public var firstAttemptAt: Int64?
    /// Unix seconds before which the next attempt does not start.
    public var nextAttemptAt: Int64?
    /// Why the last attempt failed (`status 500`, `timeout`, ...), never a body or a header.
    public var lastFailure: String?
    /// Unix seconds when delivery was given up (failures only).
    public var givenUpAt: Int64?

    public init(event: PaymentEvent) {
        clientId = event.clientId
        resourceId = event.resourceId
        eventType = event.eventType
        date = event.date
        id = event.id
    }

    public var event: PaymentEvent {
        PaymentEvent(clientId: clientId, resourceId: resourceId, eventType: eventType, date: date, id: id)
    }

    /// The same event with no delivery history, to be sent again from the start of the schedule.
    public var fresh: HookDeliveryState { HookDeliveryState(event: event) }
}
