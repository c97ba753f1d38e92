import Foundation
public import VaultCore
public import VaultStore

/// The kinds of change the merchant API reports, with Mangopay's `EventType` names (the wire value is the raw
/// value). Names that Mangopay does not have follow its pattern (`<RESOURCE>_<CHANGE>`).
public enum EventType: String, Sendable, Codable, CaseIterable {
    case payInNormalCreated = "PAYIN_NORMAL_CREATED"
    case payInNormalSucceeded = "PAYIN_NORMAL_SUCCEEDED"
    case payInNormalFailed = "PAYIN_NORMAL_FAILED"
    case payInRefundCreated = "PAYIN_REFUND_CREATED"
    case payInRefundSucceeded = "PAYIN_REFUND_SUCCEEDED"
    case payInRefundFailed = "PAYIN_REFUND_FAILED"
    case cardValidationCreated = "CARD_VALIDATION_CREATED"
    case cardValidationSucceeded = "CARD_VALIDATION_SUCCEEDED"
    case cardValidationFailed = "CARD_VALIDATION_FAILED"
    case preauthorizationCreated = "PREAUTHORIZATION_CREATED"
    case preauthorizationSucceeded = "PREAUTHORIZATION_SUCCEEDED"
    case preauthorizationFailed = "PREAUTHORIZATION_FAILED"
    case preauthorizationPaymentWaiting = "PREAUTHORIZATION_PAYMENT_WAITING"
    case preauthorizationPaymentExpired = "PREAUTHORIZATION_PAYMENT_EXPIRED"
    case preauthorizationPaymentCanceled = "PREAUTHORIZATION_PAYMENT_CANCELED"
    case preauthorizationPaymentValidated = "PREAUTHORIZATION_PAYMENT_VALIDATED"
    case depositPreauthorizationCreated = "DEPOSIT_PREAUTHORIZATION_CREATED"
    case depositPreauthorizationFailed = "DEPOSIT_PREAUTHORIZATION_FAILED"
    case depositPreauthorizationPaymentWaiting = "DEPOSIT_PREAUTHORIZATION_PAYMENT_WAITING"
    case depositPreauthorizationPaymentExpired = "DEPOSIT_PREAUTHORIZATION_PAYMENT_EXPIRED"
    case depositPreauthorizationPaymentCanceled = "DEPOSIT_PREAUTHORIZATION_PAYMENT_CANCELED"
    case depositPreauthorizationPaymentValidated = "DEPOSIT_PREAUTHORIZATION_PAYMENT_VALIDATED"
    case recurringRegistrationCreated = "RECURRING_REGISTRATION_CREATED"
    case recurringRegistrationAuthNeeded = "RECURRING_REGISTRATION_AUTH_NEEDED"
    case recurringRegistrationInProgress = "RECURRING_REGISTRATION_IN_PROGRESS"
    case recurringRegistrationEnded = "RECURRING_REGISTRATION_ENDED"
    case cardRegistrationCreated = "CARD_REGISTRATION_CREATED"
    case cardRegistrationValidated = "CARD_REGISTRATION_VALIDATED"
    case cardRegistrationError = "CARD_REGISTRATION_ERROR"
    case cardDeactivated = "CARD_DEACTIVATED"
    case userNaturalCreated = "USER_NATURAL_CREATED"
    case userLegalCreated = "USER_LEGAL_CREATED"
    case userCategoryUpdatedToOwner = "USER_CATEGORY_UPDATED_TO_OWNER"
    case userCategoryUpdatedToPayer = "USER_CATEGORY_UPDATED_TO_PAYER"
    case userClosed = "USER_CLOSED"
    case payOutNormalCreated = "PAYOUT_NORMAL_CREATED"
    case payOutNormalSucceeded = "PAYOUT_NORMAL_SUCCEEDED"
    case payOutNormalFailed = "PAYOUT_NORMAL_FAILED"
    case kycCreated = "KYC_CREATED"
}

/// One change of one resource, as `GET /events` lists it and hooks deliver it. Never holds card data: only the
/// resource's id, the kind of change and when it happened.
public struct PaymentEvent: Sendable, Equatable, Codable {
    public var clientId: String
    public var resourceId: String
    public var eventType: EventType
    /// Unix seconds (the wire's `Date`).
    public var date: Int64
    /// The store record id, `clientId:<16-digit microseconds>:<random>`: orders one client's events by time.
    public var id: String

    public init(clientId: String, resourceId: String, eventType: EventType, date: Int64, id: String) {
        self.clientId = clientId
        self.resourceId = resourceId
        self.eventType = eventType
        self.date = date
        self.id = id
    }
}

/// The microsecond stamps of a process's event ids: the clock's time, or one more than the last stamp when the
/// clock has not moved past it (a batch with two events, a manual clock, a clock stepped back).
public final class EventStamps: Sendable {
    private let last = Locked<Int64>(0)

    public init() {}

    /// A stamp after every earlier one, at least `micros`.
    public func next(atLeast micros: Int64) -> Int64 {
        last.withLock { last in
            last = max(micros, last + 1)
            return last
        }
    }
}

/// Writes events into the batch of the change they report, so that a change and its event commit together or
/// not at all, and a retried change (a version conflict re-runs it) writes its event once.
///
/// Each event is a record of ``Collections/events`` (listed by `GET /events`) and, when the client has a hook for
/// its type, an outbox entry with the same id (``Collections/eventOutbox``) that the hook delivery engine
/// consumes. The hook is looked up when the change is prepared: an event that commits while the hook for its type
/// is being created may miss the hook (a replay of the client's events queues it).
public enum EventLog {
    /// The writes that record `type` for `resourceId`; append them to the change's batch. `queued` adds the
    /// outbox entry.
    public static func writes(
        clientId: String, type: EventType, resourceId: String, clock: any WallClock, random: any RandomSource,
        stamps: EventStamps? = nil, queued: Bool = true
    ) throws -> [RecordWrite] {
        let event = make(
            clientId: clientId, type: type, resourceId: resourceId, clock: clock, random: random, stamps: stamps)
        let value = try RecordCoding.encode(event)
        let record = RecordWrite.put(collection: Collections.events, id: event.id, value: value, condition: .absent)
        guard queued else { return [record] }
        return [record, .put(collection: Collections.eventOutbox, id: event.id, value: value, condition: .absent)]
    }

    /// The writes for `type`, with the environment's clock and random source, and an outbox entry only when the
    /// client has a hook for `type` (one lookup of ``Collections/hooksByEvent``: a client without hooks writes no
    /// entry that the delivery engine would read and delete).
    public static func writes(
        _ type: EventType, resourceId: String, clientId: String, environment: PaymentsEnvironment
    ) async throws -> [RecordWrite] {
        try await writes([type], resourceId: resourceId, clientId: clientId, environment: environment)
    }

    /// The writes for each of `types` in order (``writes(_:resourceId:clientId:environment:)``), with the hooks of
    /// all the types looked up in one read (``RecordStore/get(many:)``: one round trip on PostgreSQL, not one per type).
    public static func writes(
        _ types: [EventType], resourceId: String, clientId: String, environment: PaymentsEnvironment
    ) async throws -> [RecordWrite] {
        let hooked = try await read([], hooksFor: types, clientId: clientId, store: environment.store).hooked
        return try writes(types, resourceId: resourceId, clientId: clientId, environment: environment, hooked: hooked)
    }

    /// The writes for each of `types` in order, with an outbox entry for those in `hooked`: the types with a hook when
    /// the change was prepared, as the caller read them (``read(_:hooksFor:clientId:store:)``).
    public static func writes(
        _ types: [EventType], resourceId: String, clientId: String, environment: PaymentsEnvironment,
        hooked: Set<EventType>
    ) throws -> [RecordWrite] {
        var writes: [RecordWrite] = []
        for type in types {
            writes += try self.writes(
                clientId: clientId, type: type, resourceId: resourceId, clock: environment.clock,
                random: environment.random, stamps: environment.eventStamps, queued: hooked.contains(type))
        }
        return writes
    }

    /// The records a change read, in order (nil where absent), and the event types with a hook (not a tuple: `Stored`).
    public struct HookedRead {
        public var records: [Record?]
        public var hooked: Set<EventType>
    }

    /// Reads `keys` and the client's hooks for `types` in one ``RecordStore/get(many:)`` (one round trip on PostgreSQL).
    public static func read(
        _ keys: [(collection: String, id: String)], hooksFor types: [EventType], clientId: String,
        store: any RecordStore
    ) async throws -> HookedRead {
        let found = try await store.get(
            many: keys + types.map { (Collections.hooksByEvent, hookKey(clientId: clientId, type: $0)) })
        let hooked = zip(types, found.suffix(types.count)).compactMap { type, record in record == nil ? nil : type }
        return HookedRead(records: Array(found.prefix(keys.count)), hooked: Set(hooked))
    }

    /// The id of the client's hook for `type` in ``Collections/hooksByEvent`` (its value is the hook's id).
    public static func hookKey(clientId: String, type: EventType) -> String { clientId + ":" + type.rawValue }

    /// The start of every event id of `clientId` (scan ``Collections/events`` with it).
    public static func idPrefix(clientId: String) -> String { Identifier.scoped(clientId, "") }

    /// The event id position of `clientId` at `micros` microseconds: ids after it are of later events (scan with it
    /// as `after` to skip earlier ones).
    public static func idPosition(clientId: String, micros: Int64) -> String {
        idPrefix(clientId: clientId) + padded(micros)
    }

    static func padded(_ micros: Int64) -> String {
        let stamp = String(max(0, micros))
        return String(repeating: "0", count: max(0, 16 - stamp.utf8.count)) + stamp
    }

    /// A new event at the clock's time (microsecond order within the client; a random suffix keeps two events
    /// of one microsecond apart).
    static func make(
        clientId: String, type: EventType, resourceId: String, clock: any WallClock, random: any RandomSource,
        stamps: EventStamps? = nil
    ) -> PaymentEvent {
        let seconds = clock.now.timeIntervalSince1970
        let clockMicros = Int64((seconds * 1_000_000).rounded(.down))
        let micros = stamps?.next(atLeast: clockMicros) ?? clockMicros
        let id = Identifier.indexed(clientId, padded(micros), Identifier.make("evt_", random: random))
        return PaymentEvent(
            clientId: clientId, resourceId: resourceId, eventType: type, date: Int64(seconds.rounded(.down)), id: id)
    }
}
