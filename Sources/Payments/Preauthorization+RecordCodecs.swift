public import VaultStore

// The binary codecs of a hold and a capture's source, stored inside ``PayIn`` (tags 32 and 33). Tags are fixed
// forever, as in RecordCodecs.swift.

extension PreauthorizationStateMachine.Capture: BinarySchema {
    public static let binaryFields: [BinaryField<Self>] = [.string(1, \.payInId), .int(2, \.amount)]
    public static var binaryBlank: Self { Self(payInId: "", amount: 0) }
}

extension PreauthorizationStateMachine: BinarySchema {
    public static let binaryFields: [BinaryField<Self>] = [
        .raw(1, \.kind), .raw(2, \.paymentStatus), .int(3, \.authorized), .int(4, \.remaining), .int(5, \.expiresAt),
        .bool(6, \.multiCapture), .records(7, \.captures), .record(8, \.complement),
    ]
    public static var binaryBlank: Self { Self(kind: .preauthorization, authorized: 0, now: 0) }
}

extension CaptureSource: BinarySchema {
    public static let binaryFields: [BinaryField<Self>] = [.raw(1, \.kind), .string(2, \.id)]
    public static var binaryBlank: Self { Self(kind: .preauthorization, id: "") }
}
