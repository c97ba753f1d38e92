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
    static let idempotencyEntry: UInt8 = 9
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

// The pay-in's record, its funds, browser and risk assessment, the wallet and the event are written out by hand (no
// key paths, no closures per field: a pay-in writes one pay-in and one wallet and reads up to two of each per
// request); the tags are the ones their schemas had, and `HandWrittenCodecTests` compares the bytes with those
// schemas.

extension Wallet: BinaryRecord {
    public static var recordKind: UInt8 { RecordKind.wallet }

    // 1 id, 2 clientId, 3 ownerId, 4 description, 5 currency, 6 balance, 7 tag, 8 creationDate.
    public func encode(to writer: inout BinaryRecordWriter) {
        writer.string(1, id)
        writer.string(2, clientId)
        writer.string(3, ownerId)
        writer.string(4, description)
        writer.string(5, currency)
        writer.int(6, balance)
        writer.string(7, tag)
        writer.int(8, creationDate)
    }

    private static let requiredTags = tagMask(1, 2, 3, 4, 5, 6, 8)

    public init(from reader: inout BinaryRecordReader) throws {
        self.init(
            id: "", clientId: "", ownerId: "", description: "", currency: "", balance: 0, tag: nil, creationDate: 0)
        var seen: UInt64 = 0
        while let field = try reader.next() {
            switch field {
            case 1: id = try reader.string()
            case 2: clientId = try reader.string()
            case 3: ownerId = try reader.string()
            case 4: description = try reader.string()
            case 5: currency = try reader.string()
            case 6: balance = try reader.int64()
            case 7: tag = try reader.string()
            case 8: creationDate = try reader.int64()
            default: try reader.skip()  // unknown: its bit is never a required one (an overshift is 0)
            }
            seen |= 1 << UInt64(field)
        }
        try checkRequired(seen, Self.requiredTags, Self.self)
    }
}

extension Funds: BinaryFields {
    // 1 currency, 2 amount.
    public func encode(to writer: inout BinaryRecordWriter) {
        writer.string(1, currency)
        writer.int(2, amount)
    }

    public init(from reader: inout BinaryRecordReader) throws {
        var currency: String?
        var amount: Int64?
        while let tag = try reader.next() {
            switch tag {
            case 1: currency = try reader.string()
            case 2: amount = try reader.int64()
            default: try reader.skip()
            }
        }
        self.init(currency: try required(currency, "currency"), amount: try required(amount, "amount"))
    }
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

extension BrowserInfo: BinaryFields {
    // 1 acceptHeader, 2 javaEnabled, 3 javascriptEnabled, 4 language, 5 colorDepth, 6 screenHeight, 7 screenWidth,
    // 8 timeZoneOffset, 9 userAgent, 10 alternateTypes; every field optional.
    public func encode(to writer: inout BinaryRecordWriter) {
        writer.string(1, acceptHeader)
        writer.bool(2, javaEnabled)
        writer.bool(3, javascriptEnabled)
        writer.string(4, language)
        writer.int(5, colorDepth)
        writer.int(6, screenHeight)
        writer.int(7, screenWidth)
        writer.string(8, timeZoneOffset)
        writer.string(9, userAgent)
        writer.int(10, alternateTypes?.rawValue)
    }

    public init(from reader: inout BinaryRecordReader) throws {
        self.init()
        while let tag = try reader.next() {
            switch tag {
            case 1: acceptHeader = try reader.string()
            case 2: javaEnabled = try reader.bool()
            case 3: javascriptEnabled = try reader.bool()
            case 4: language = try reader.string()
            case 5: colorDepth = try reader.int()
            case 6: screenHeight = try reader.int()
            case 7: screenWidth = try reader.int()
            case 8: timeZoneOffset = try reader.string()
            case 9: userAgent = try reader.string()
            case 10: alternateTypes = BrowserInfo.AlternateTypes(rawValue: try reader.int())
            default: try reader.skip()
            }
        }
    }
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

extension RiskReason: BinaryFields {
    // 1 rule, 2 detail, 3 points.
    public func encode(to writer: inout BinaryRecordWriter) {
        writer.string(1, rule)
        writer.string(2, detail)
        writer.int(3, points)
    }

    public init(from reader: inout BinaryRecordReader) throws {
        var rule: String?
        var detail: String?
        var points: Int?
        while let tag = try reader.next() {
            switch tag {
            case 1: rule = try reader.string()
            case 2: detail = try reader.string()
            case 3: points = try reader.int()
            default: try reader.skip()
            }
        }
        self.init(
            rule: try required(rule, "rule"), detail: try required(detail, "detail"),
            points: try required(points, "points"))
    }
}

extension RiskAssessment: BinaryFields {
    // 1 score, 2 decision, 3 reasons (one field per reason, in order).
    public func encode(to writer: inout BinaryRecordWriter) {
        writer.int(1, score)
        writer.string(2, decision.rawValue)
        for reason in reasons { writer.record(3, reason) }
    }

    public init(from reader: inout BinaryRecordReader) throws {
        var score: Int?
        var decision: RiskDecision?
        var reasons: [RiskReason] = []
        while let tag = try reader.next() {
            switch tag {
            case 1: score = try reader.int()
            case 2: decision = try rawValue(RiskDecision.self, try reader.string(), "decision")
            case 3: reasons.append(try reader.record(RiskReason.self))
            default: try reader.skip()
            }
        }
        self.init(
            score: try required(score, "score"), decision: try required(decision, "decision"), reasons: reasons)
    }
}

extension PayInStateMachine: BinaryFields {
    // State: tag 2 is the case (0 created, 1 awaiting challenge, 2 succeeded, 3 failed); tag 3 the challenge
    // deadline (the bits of its time interval since 2001, exact); tag 4 the failure's result; tag 5 the redirect
    // step when it is not 3-D Secure.
    public func encode(to writer: inout BinaryRecordWriter) {
        writer.string(1, purpose.rawValue)
        if redirect != .threeDSecure { writer.string(5, redirect.rawValue) }
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
        var redirect = Redirect.threeDSecure
        while let tag = try reader.next() {
            switch tag {
            case 1: purpose = try rawValue(Purpose.self, try reader.string(), "purpose")
            case 5: redirect = try rawValue(Redirect.self, try reader.string(), "redirect")
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
        self.init(purpose: try required(purpose, "purpose"), state: state, redirect: redirect)
    }
}

extension PayIn: BinaryRecord {
    public static var recordKind: UInt8 { RecordKind.payIn }

    /// The tags a stored pay-in must have, one bit each.
    private static let requiredTags: UInt64 = [1, 2, 3, 4, 7, 8, 9, 10, 11, 12, 13, 25, 26, 28, 30].reduce(0) {
        $0 | 1 << UInt64($1)
    }

    // 1 id, 2 clientId, 3 machine, 4 authorId, 5 creditedUserId, 6 creditedWalletId, 7 debitedFunds, 8 fees,
    // 9 cardId, 10 cardInfo, 11 secureMode, 12 secureModeReturnURL, 13 secureModeNeeded, 14 challengeSecret,
    // 15 ipAddress, 16 browserInfo, 17 statementDescriptor, 18 tag, 19 billing, 20 shipping, 21 culture,
    // 22 profilingAttemptReference, 23 preferredCardNetwork, 24 paymentCategory, 25 risk, 26 fingerprint,
    // 27 deviceId, 28 creationDate, 29 executionDate, 30 refunded, 31 refundedFees, 32 hold, 33 capturedFrom;
    // 34-37: recurring and wallet pay-ins (PayInKind); 38: what the ACS page shows; 39: a PayPal pay-in's order.
    public func encode(to writer: inout BinaryRecordWriter) {
        writer.string(1, id)
        writer.string(2, clientId)
        writer.record(3, machine)
        writer.string(4, authorId)
        writer.string(5, creditedUserId)
        writer.string(6, creditedWalletId)
        writer.record(7, debitedFunds)
        writer.record(8, fees)
        writer.string(9, cardId)
        writer.record(10, cardInfo)
        writer.string(11, secureMode.rawValue)
        writer.string(12, secureModeReturnURL)
        writer.bool(13, secureModeNeeded)
        writer.string(14, challengeSecret)
        writer.string(15, ipAddress)
        writer.record(16, browserInfo)
        writer.string(17, statementDescriptor)
        writer.string(18, tag)
        writer.record(19, billing)
        writer.record(20, shipping)
        writer.string(21, culture)
        writer.string(22, profilingAttemptReference)
        writer.string(23, preferredCardNetwork)
        writer.string(24, paymentCategory)
        writer.record(25, risk)
        writer.string(26, fingerprint)
        writer.string(27, deviceId)
        writer.int(28, creationDate)
        writer.int(29, executionDate)
        writer.int(30, refunded)
        writer.int(31, refundedFees)
        writer.record(32, hold)
        writer.record(33, capturedFrom)
        writer.string(34, kind)
        writer.string(35, recurringRegistrationId)
        writer.string(36, walletNetwork)
        writer.string(37, walletTransactionId)
        writer.record(38, challengeDisplay)
        writer.record(39, payPal)
    }

    public init(from reader: inout BinaryRecordReader) throws {
        self.init(
            id: "", clientId: "", machine: PayInStateMachine(purpose: .payIn), authorId: "", creditedUserId: nil,
            creditedWalletId: nil, debitedFunds: Funds(currency: "", amount: 0), fees: Funds(currency: "", amount: 0),
            cardId: "", cardInfo: CardInfo.binaryBlank,
            secureMode: .default, secureModeReturnURL: "", secureModeNeeded: false, challengeSecret: nil,
            ipAddress: nil, browserInfo: nil, statementDescriptor: nil, tag: nil, billing: nil, shipping: nil,
            culture: nil, profilingAttemptReference: nil, preferredCardNetwork: nil, paymentCategory: nil,
            risk: RiskAssessment(score: 0, decision: .allow, reasons: []), fingerprint: "", deviceId: nil,
            creationDate: 0, executionDate: nil, refunded: 0, refundedFees: nil)
        let requiredTags = Self.requiredTags
        var seen: UInt64 = 0
        while let field = try reader.next() {
            if field < 64 { seen |= 1 << UInt64(field) }
            switch field {
            case 1: id = try reader.string()
            case 2: clientId = try reader.string()
            case 3: machine = try reader.record(PayInStateMachine.self)
            case 4: authorId = try reader.string()
            case 5: creditedUserId = try reader.string()
            case 6: creditedWalletId = try reader.string()
            case 7: debitedFunds = try reader.record(Funds.self)
            case 8: fees = try reader.record(Funds.self)
            case 9: cardId = try reader.string()
            case 10: cardInfo = try reader.record(CardInfo.self)
            case 11: secureMode = try rawValue(SecureMode.self, try reader.string(), "secureMode")
            case 12: secureModeReturnURL = try reader.string()
            case 13: secureModeNeeded = try reader.bool()
            case 14: challengeSecret = try reader.string()
            case 15: ipAddress = try reader.string()
            case 16: browserInfo = try reader.record(BrowserInfo.self)
            case 17: statementDescriptor = try reader.string()
            case 18: tag = try reader.string()
            case 19: billing = try reader.record(PartyAddress.self)
            case 20: shipping = try reader.record(PartyAddress.self)
            case 21: culture = try reader.string()
            case 22: profilingAttemptReference = try reader.string()
            case 23: preferredCardNetwork = try reader.string()
            case 24: paymentCategory = try reader.string()
            case 25: risk = try reader.record(RiskAssessment.self)
            case 26: fingerprint = try reader.string()
            case 27: deviceId = try reader.string()
            case 28: creationDate = try reader.int64()
            case 29: executionDate = try reader.int64()
            case 30: refunded = try reader.int64()
            case 31: refundedFees = try reader.int64()
            case 32: hold = try reader.record(PreauthorizationStateMachine.self)
            case 33: capturedFrom = try reader.record(CaptureSource.self)
            case 34: kind = try reader.string()
            case 35: recurringRegistrationId = try reader.string()
            case 36: walletNetwork = try reader.string()
            case 37: walletTransactionId = try reader.string()
            case 38: challengeDisplay = try reader.record(ChallengeDisplay.self)
            case 39: payPal = try reader.record(PayPalOrder.self)
            default: try reader.skip()
            }
        }
        if seen & requiredTags != requiredTags {
            throw BinaryRecordError("a required field of PayIn is missing")
        }
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
            debitedFunds: Funds(currency: "", amount: 0), fees: Funds(currency: "", amount: 0), status: "",
            result: ResultCode.binaryBlank,
            tag: nil,
            creationDate: 0, executionDate: nil)
    }
}

extension PaymentEvent: BinaryRecord {
    /// The kind byte of events and of the outbox entries made from them (see ``RecordKind``).
    public static var recordKind: UInt8 { RecordKind.event }

    // 1 clientId, 2 resourceId, 3 eventType, 4 date, 5 id: shared with Hooks' delivery state of an event; never
    // give them another meaning.
    public func encode(to writer: inout BinaryRecordWriter) {
        writer.string(1, clientId)
        writer.string(2, resourceId)
        writer.string(3, eventType.rawValue)
        writer.int(4, date)
        writer.string(5, id)
    }

    public init(from reader: inout BinaryRecordReader) throws {
        var clientId: String?
        var resourceId: String?
        var eventType: EventType?
        var date: Int64?
        var id: String?
        while let tag = try reader.next() {
            switch tag {
            case 1: clientId = try reader.string()
            case 2: resourceId = try reader.string()
            case 3: eventType = try rawValue(EventType.self, try reader.string(), "eventType")
            case 4: date = try reader.int64()
            case 5: id = try reader.string()
            default: try reader.skip()
            }
        }
        self.init(
            clientId: try required(clientId, "clientId"), resourceId: try required(resourceId, "resourceId"),
            eventType: try required(eventType, "eventType"), date: try required(date, "date"),
            id: try required(id, "id"))
    }
}

// An idempotency entry holds a whole response body: in JSON, `[UInt8]` is an array of numbers, about four bytes
// of text per byte of body, encoded twice per request (the reservation, then the response) and decoded on each
// replay and by the sweeper.

extension StoredResponse: BinaryFields {
    // 1 statusCode, 2 contentType, 3 body, 4 requestURL, 5 date.
    public func encode(to writer: inout BinaryRecordWriter) {
        writer.int(1, statusCode)
        writer.string(2, contentType)
        writer.bytes(3, body)
        writer.string(4, requestURL)
        writer.int(5, date)
    }

    public init(from reader: inout BinaryRecordReader) throws {
        var statusCode: Int?
        var contentType: String?
        var body: [UInt8] = []
        var requestURL: String?
        var date: Int64?
        while let tag = try reader.next() {
            switch tag {
            case 1: statusCode = try reader.int()
            case 2: contentType = try reader.string()
            case 3: body = try reader.bytes()
            case 4: requestURL = try reader.string()
            case 5: date = try reader.int64()
            default: try reader.skip()
            }
        }
        self.init(
            statusCode: try required(statusCode, "statusCode"), contentType: try required(contentType, "contentType"),
            body: body, requestURL: try required(requestURL, "requestURL"), date: try required(date, "date"))
    }
}

extension IdempotencyLedger.Entry: BinaryRecord {
    static var recordKind: UInt8 { RecordKind.idempotencyEntry }

    // 1 requestDigest, 2 createdAt, 3 response (absent while the first request runs).
    func encode(to writer: inout BinaryRecordWriter) {
        writer.bytes(1, requestDigest)
        writer.int(2, createdAt)
        writer.record(3, response)
    }

    init(from reader: inout BinaryRecordReader) throws {
        var requestDigest: [UInt8]?
        var createdAt: Int64?
        var response: StoredResponse?
        while let tag = try reader.next() {
            switch tag {
            case 1: requestDigest = try reader.bytes()
            case 2: createdAt = try reader.int64()
            case 3: response = try reader.record(StoredResponse.self)
            default: try reader.skip()
            }
        }
        self.init(
            requestDigest: try required(requestDigest, "requestDigest"),
            createdAt: try required(createdAt, "createdAt"),
            response: response)
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
        case Collections.idempotency: IdempotencyLedger.Entry.self
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
