import Payments
public import VaultStore

// The binary codec of an event on its way to a hook (the outbox, the given-up deliveries). It shares the event's
// kind byte and tags 1-5 with ``PaymentEvent`` (Payments' RecordCodecs.swift): the change that reports an event
// writes its outbox entry as the event's bytes, which decode here with no delivery history. The delivery's own
// fields take tags 6 on; tags are fixed forever.
extension HookDeliveryState: BinaryRecord, BinarySchema {
    public static var recordKind: UInt8 { PaymentEvent.recordKind }
    public static let binaryFields: [BinaryField<Self>] = [
        .string(1, \.clientId), .string(2, \.resourceId), .raw(3, \.eventType), .int(4, \.date), .string(5, \.id),
        .int(6, \.failures), .int(7, \.firstAttemptAt), .int(8, \.nextAttemptAt), .string(9, \.lastFailure),
        .int(10, \.givenUpAt),
    ]
    public static var binaryBlank: Self {
        HookDeliveryState(
            event: PaymentEvent(clientId: "", resourceId: "", eventType: .payInNormalCreated, date: 0, id: ""))
    }
}
