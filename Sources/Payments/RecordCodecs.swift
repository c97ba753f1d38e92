import Foundation
public import Risk
public import VaultStore

// The binary codecs of the stored record types (see ``BinaryRecordFormat``). Tags are fixed forever: a field
// that goes away leaves its tag unused; a new field takes a new tag and is optional (or has a default) so that
// records written before it still decode. Types without a codec here are stored as JSON. The tokenization path's
// records (card registration, pending card, profiling attempt, card) have hand-written codecs in
// CardRecordCodecs.swift.

/// Kind bytes of the binary record header, one per record type; never reused.
enum RecordKind {
    static let cardRegistration: UInt8 = 1
    static let profilingAttempt: UInt8 = 2
    static let card: UInt8 = 3
    static let wallet: UInt8 = 4
    static let payIn: UInt8 = 5
    static let payInAssessment: UInt8 = 6
    static let refund: UInt8 = 7
    /// An event (``PaymentEvent``), and an event on its way to a hook (`HookDeliveryState` in Hooks, which
    /// stores the event's fields under the same tags 1-5 and its delivery's from tag 6 on): an outbox entry is
    /// written as the event's bytes and read back as a delivery state, so the two types share one kind.
    static let event: UInt8 = 8
}

/// The value of a required field, or an error naming the field (never its value).
@inline(__always)
private func required<T>(_ value: T?, _ field: StaticString) throws -> T {
    guard let value else { throw BinaryRecordError("required field \(field) is missing") }
    return value
}

private func rawValue<T: RawRepresentable>(_ type: T.Type, _ text: String, _ field: StaticString) throws -> T
where T.RawValue == String {
    guard let value = T(rawValue: text) else { throw BinaryRecordError("field \(field) holds an unknown value") }
    return value
}

extension ResultCode: BinarySchema {
    public static let binaryFields: [BinaryField<Self>] = [.string(1, \.code), .string(2, \.message)]
    public static var binaryBlank: Self { ResultCode(code: "", message: "") }
}

extension Wallet: BinaryRecord, BinarySchema {
    public static var recordKind: UInt8 { RecordKind.wallet }
    public static let binaryFields: [BinaryField<Self>] = [
        .string(1, \.id), .string(2, \.clientId), .string(3, \.ownerId), .string(4, \.description),
        .string(5, \.currency), .int(6, \.balance), .string(7, \.tag), .int(8, \.creationDate),
    ]
    public static var binaryBlank: Self {
        Wallet(id: "", clientId: "", ownerId: "", description: "", currency: "", balance: 0, tag: nil, creationDate: 0)
    }
}

extension Funds: BinarySchema {
    public static let binaryFields: [BinaryField<Self>] = [.string(1, \.currency), .int(2, \.amount)]
    public static var binaryBlank: Self { Funds(currency: "", amount: 0) }
}

extension CardInfo: BinarySchema {
    public static let binaryFields: [BinaryField<Self>] = [
        .string(1, \.bin), .string(2, \.issuingBank), .string(3, \.issuerCountryCode), .string(4, \.type),
        .string(5, \.brand), .string(6, \.subType),
    ]
    public static var binaryBlank: Self {
        CardInfo(bin: "", issuingBank: nil, issuerCountryCode: nil, type: nil, brand: "", subType: nil)
    }
}

extension BrowserInfo: BinarySchema {
    public static let binaryFields: [BinaryField<Self>] = [
        .string(1, \.acceptHeader), .bool(2, \.javaEnabled), .bool(3, \.javascriptEnabled), .string(4, \.language),
        .int(5, \.colorDepth), .int(6, \.screenHeight), .int(7, \.screenWidth), .string(8, \.timeZoneOffset),
        .string(9, \.userAgent),
    ]
    public static var binaryBlank: Self { BrowserInfo() }
}

extension Address: BinarySchema {
    public static let binaryFields: [BinaryField<Self>] = [
        .string(1, \.addressLine1), .string(2, \.addressLine2), .string(3, \.city), .string(4, \.region),
        .string(5, \.postalCode), .string(6, \.country),
    ]
    public static var binaryBlank: Self { Address() }
}

extension PartyAddress: BinarySchema {
    public static let binaryFields: [BinaryField<Self>] = [
        .string(1, \.firstName), .string(2, \.lastName), .record(3, \.address),
    ]
    public static var binaryBlank: Self { PartyAddress() }
}

extension RiskReason: BinarySchema {
    public static let binaryFields: [BinaryField<Self>] = [.string(1, \.rule), .string(2, \.detail), .int(3, \.points)]
    public static var binaryBlank: Self { RiskReason(rule: "", detail: "", points: 0) }
}

extension RiskAssessment: BinarySchema {
    public static let binaryFields: [BinaryField<Self>] = [
        .int(1, \.score), .raw(2, \.decision), .records(3, \.reasons),
    ]
    public static var binaryBlank: Self { RiskAssessment(score: 0, decision: .allow, reasons: []) }
}

extension PayInStateMachine: BinaryFields {
    // State: tag 2 is the case (0 created, 1 awaiting challenge, 2 succeeded, 3 failed); tag 3 the challenge
    // deadline (the bits of its time interval since 2001, exact); tag 4 the failure's result.
    public func encode(to writer: inout BinaryRecordWriter) {
        writer.string(1, purpose.rawValue)
        switch state {
        case .created:
            writer.unsigned(2, 0)
        case .awaitingChallenge(let expiresAt):
            writer.unsigned(2, 1)
            writer.unsigned(3, expiresAt.timeIntervalSinceReferenceDate.bitPattern)
        case .succeeded:
            writer.unsigned(2, 2)
        case .failed(let result):
            writer.unsigned(2, 3)
            writer.record(4, result)
        }
    }

    public init(from reader: inout BinaryRecordReader) throws {
        var purpose: Purpose?
        var stateCase: UInt64?
        var expiresAt: Date?
        var result: ResultCode?
        while let tag = try reader.next() {
            switch tag {
            case 1: purpose = try rawValue(Purpose.self, try reader.string(), "purpose")
            case 2: stateCase = try reader.unsigned()
            case 3: expiresAt = Date(timeIntervalSinceReferenceDate: Double(bitPattern: try reader.unsigned()))
            case 4: result = try reader.record(ResultCode.self)
            default: try reader.skip()
            }
        }
        let state: State
        switch try required(stateCase, "state") {
        case 0: state = .created
        case 1: state = .awaitingChallenge(expiresAt: try required(expiresAt, "expiresAt"))
        case 2: state = .succeeded
        case 3: state = .failed(try required(result, "result"))
        default: throw BinaryRecordError("field state holds an unknown value")
        }
        self.init(purpose: try required(purpose, "purpose"), state: state)
    }
}

extension PayIn: BinaryRecord, BinarySchema {
    public static var recordKind: UInt8 { RecordKind.payIn }
    public static let binaryFields: [BinaryField<Self>] = [
        .string(1, \.id), .string(2, \.clientId), .record(3, \.machine), .string(4, \.authorId),
        .string(5, \.creditedUserId), .string(6, \.creditedWalletId), .record(7, \.debitedFunds), .record(8, \.fees),
        .string(9, \.cardId), .record(10, \.cardInfo), .raw(11, \.secureMode), .string(12, \.secureModeReturnURL),
        .bool(13, \.secureModeNeeded), .string(14, \.challengeSecret), .string(15, \.ipAddress),
        .record(16, \.browserInfo), .string(17, \.statementDescriptor), .string(18, \.tag), .record(19, \.billing),
        .record(20, \.shipping), .string(21, \.culture), .string(22, \.profilingAttemptReference),
        .string(23, \.preferredCardNetwork), .string(24, \.paymentCategory), .record(25, \.risk),
        .string(26, \.fingerprint), .string(27, \.deviceId), .int(28, \.creationDate), .int(29, \.executionDate),
        .int(30, \.refunded), .int(31, \.refundedFees), .record(32, \.hold), .record(33, \.capturedFrom),
        // 34-37: recurring and wallet pay-ins (PayInKind); 38: what the ACS page shows.
        .string(34, \.kind), .string(35, \.recurringRegistrationId), .string(36, \.walletNetwork),
        .string(37, \.walletTransactionId), .record(38, \.challengeDisplay),
    ]
    public static var binaryBlank: Self {
        PayIn(
            id: "", clientId: "", machine: PayInStateMachine(purpose: .payIn), authorId: "", creditedUserId: nil,
            creditedWalletId: nil, debitedFunds: Funds.binaryBlank, fees: Funds.binaryBlank, cardId: "",
            cardInfo: CardInfo.binaryBlank, secureMode: .default, secureModeReturnURL: "", secureModeNeeded: false,
            challengeSecret: nil, ipAddress: nil, browserInfo: nil, statementDescriptor: nil, tag: nil, billing: nil,
            shipping: nil, culture: nil, profilingAttemptReference: nil, preferredCardNetwork: nil,
            paymentCategory: nil, risk: RiskAssessment.binaryBlank, fingerprint: "", deviceId: nil, creationDate: 0,
            executionDate: nil, refunded: 0, refundedFees: nil)
    }
}

extension PayInAssessment: BinaryRecord, BinarySchema {
    public static var recordKind: UInt8 { RecordKind.payInAssessment }
    public static let binaryFields: [BinaryField<Self>] = [
        .string(1, \.transactionId), .int(2, \.score), .raw(3, \.decision), .records(4, \.reasons),
        .int(5, \.creationDate),
    ]
    public static var binaryBlank: Self {
        PayInAssessment(transactionId: "", score: 0, decision: .allow, reasons: [], creationDate: 0)
    }
}

extension Refund: BinaryRecord, BinarySchema {
    public static var recordKind: UInt8 { RecordKind.refund }
    public static let binaryFields: [BinaryField<Self>] = [
        .string(1, \.id), .string(2, \.clientId), .string(3, \.payInId), .string(4, \.authorId),
        .string(5, \.creditedUserId), .string(6, \.debitedWalletId), .record(7, \.debitedFunds), .record(8, \.fees),
        .string(9, \.status), .record(10, \.result), .string(11, \.tag), .int(12, \.creationDate),
        .int(13, \.executionDate),
    ]
    public static var binaryBlank: Self {
        Refund(
            id: "", clientId: "", payInId: "", authorId: "", creditedUserId: nil, debitedWalletId: "",
            debitedFunds: Funds.binaryBlank, fees: Funds.binaryBlank, status: "", result: ResultCode.binaryBlank,
            tag: nil,
            creationDate: 0, executionDate: nil)
    }
}

extension PaymentEvent: BinaryRecord, BinarySchema {
    /// The kind byte of events and of the outbox entries made from them (see ``RecordKind``).
    public static var recordKind: UInt8 { RecordKind.event }
    // Tags 1-5 are shared with Hooks' delivery state of an event; never give them another meaning.
    public static let binaryFields: [BinaryField<Self>] = [
        .string(1, \.clientId), .string(2, \.resourceId), .raw(3, \.eventType), .int(4, \.date), .string(5, \.id),
    ]
    public static var binaryBlank: Self {
        PaymentEvent(clientId: "", resourceId: "", eventType: .payInNormalCreated, date: 0, id: "")
    }
}

extension RecordCoding {
    /// The record type with a binary codec that `collection` holds, if any. Rewrap and compaction hand every JSON
    /// value of these collections to ``upgrade(collection:value:)``.
    static func binaryType(forCollection collection: String) -> (any BinaryRecord.Type)? {
        switch collection {
        case Collections.registrations: CardRegistration.self
        case Collections.profilingAttempts: ProfilingAttempt.self
        case Collections.cards: Card.self
        case Collections.wallets: Wallet.self
        case PayInService.payIns, PayInService.validations: PayIn.self
        case PayInService.preauthorizations, PayInService.depositPreauthorizations: PayIn.self
        case PayInService.refunds: Refund.self
        case PayInService.assessments: PayInAssessment.self
        // The outbox and the given-up deliveries hold Hooks' delivery states: their JSON stays as it is.
        case Collections.events: PaymentEvent.self
        default: nil
        }
    }

    /// The binary form of a JSON value written by an earlier build, for a collection whose type has a binary codec;
    /// nil when there is nothing to upgrade (already binary, no codec, or not decodable: left as it is).
    static func upgrade(collection: String, value: [UInt8]) -> [UInt8]? {
        guard !value.isEmpty, !isBinary(value), let type = binaryType(forCollection: collection) else { return nil }
        return upgradeJSON(type, value)
    }

    private static func upgradeJSON<T: BinaryRecord>(_ type: T.Type, _ value: [UInt8]) -> [UInt8]? {
        guard let decoded = try? JSONDecoder().decode(type, from: Data(value)) else { return nil }
        return try? encode(decoded)
    }
}

/// The stored-record formats, for whoever opens the store (``FileStoreOptions/valueUpgrade``).
public enum StoredRecordFormat {
    /// Moves a JSON value of a record type with a binary codec to the binary format (nil: leave it).
    public static func upgrade(collection: String, value: [UInt8]) -> [UInt8]? {
        RecordCoding.upgrade(collection: collection, value: value)
    }
}
