public import VaultStore

// Hand-written codecs of the tokenization path's records (no key paths: the schema cost a `swift_getAtKeyPath`
// and a closure call per field). The bytes are the key-path schema's exactly (same tags, same order, absent
// optionals left out), so stored records keep reading both ways. Tags are fixed forever (see RecordCodecs.swift).

/// The mask of `tags` (all below 64).
func tagMask(_ tags: Int...) -> UInt64 { tags.reduce(0) { $0 | 1 << UInt64($1) } }

/// Throws for the first tag of `required` missing from `seen`, naming the tag and the type, never a value.
func checkRequired(_ seen: UInt64, _ required: UInt64, _ type: Any.Type) throws {
    let missing = required & ~seen
    guard missing != 0 else { return }
    throw BinaryRecordError("required field \(missing.trailingZeroBitCount) of \(type) is missing")
}

/// The string enumeration value `text` of field `tag` (an unknown value is an error, not a default).
private func known<E: RawRepresentable>(_ text: String, _ tag: Int) throws -> E where E.RawValue == String {
    guard let value = E(rawValue: text) else { throw BinaryRecordError("field \(tag) holds an unknown value") }
    return value
}

extension PendingCard: BinaryFields {
    private static let requiredTags = tagMask(1, 2, 3, 4, 5, 6, 7, 9, 10)

    public func encode(to writer: inout BinaryRecordWriter) {
        writer.string(1, cardId)
        writer.bytes(2, tokenDigest)
        writer.string(3, brand)
        writer.string(4, cardProvider)
        writer.string(5, alias)
        writer.string(6, expirationDate)
        writer.string(7, fingerprint)
        writer.string(8, country)
        writer.string(9, profilingReference)
        writer.int(10, tokenizedAt)
    }

    public init(from reader: inout BinaryRecordReader) throws {
        self.init(
            cardId: "", tokenDigest: [], brand: "", cardProvider: "", alias: "", expirationDate: "", fingerprint: "",
            country: nil, profilingReference: "", tokenizedAt: 0)
        var seen: UInt64 = 0
        while let tag = try reader.next() {
            switch tag {
            case 1: cardId = try reader.string()
            case 2: tokenDigest = try reader.bytes()
            case 3: brand = try reader.string()
            case 4: cardProvider = try reader.string()
            case 5: alias = try reader.string()
            case 6: expirationDate = try reader.string()
            case 7: fingerprint = try reader.string()
            case 8: country = try reader.string()
            case 9: profilingReference = try reader.string()
            case 10: tokenizedAt = try reader.int64()
            default: try reader.skip()  // unknown: its bit is never a required one (an overshift is 0)
            }
            seen |= 1 << UInt64(tag)
        }
        try checkRequired(seen, Self.requiredTags, Self.self)
    }
}

extension CardRegistration: BinaryRecord {
    public static var recordKind: UInt8 { RecordKind.cardRegistration }
    private static let requiredTags = tagMask(1, 2, 3, 4, 5, 7, 8, 9, 13)

    public func encode(to writer: inout BinaryRecordWriter) {
        writer.string(1, id)
        writer.string(2, clientId)
        writer.string(3, userId)
        writer.string(4, currency)
        writer.string(5, cardType)
        writer.string(6, tag)
        writer.int(7, creationDate)
        writer.string(8, accessKey)
        writer.string(9, preregistrationData)
        writer.string(10, registrationData)
        writer.string(11, cardId)
        writer.record(12, result)
        writer.string(13, status.rawValue)
        writer.string(14, cardHolderName)
        writer.int(15, failedAttempts)
        writer.record(16, pending)
    }

    public init(from reader: inout BinaryRecordReader) throws {
        self.init(
            id: "", clientId: "", userId: "", currency: "", cardType: "", tag: nil, creationDate: 0, accessKey: "",
            preregistrationData: "", registrationData: nil, cardId: nil, result: nil, status: .created,
            cardHolderName: nil, failedAttempts: 0, pending: nil)
        var seen: UInt64 = 0
        while let field = try reader.next() {
            switch field {
            case 1: id = try reader.string()
            case 2: clientId = try reader.string()
            case 3: userId = try reader.string()
            case 4: currency = try reader.string()
            case 5: cardType = try reader.string()
            case 6: tag = try reader.string()
            case 7: creationDate = try reader.int64()
            case 8: accessKey = try reader.string()
            case 9: preregistrationData = try reader.string()
            case 10: registrationData = try reader.string()
            case 11: cardId = try reader.string()
            case 12: result = try reader.record(ResultCode.self)
            case 13: status = try known(try reader.string(), 13)
            case 14: cardHolderName = try reader.string()
            case 15: failedAttempts = try reader.int()
            case 16: pending = try reader.record(PendingCard.self)
            default: try reader.skip()  // unknown: its bit is never a required one (an overshift is 0)
            }
            seen |= 1 << UInt64(field)
        }
        try checkRequired(seen, Self.requiredTags, Self.self)
    }
}

extension ProfilingAttempt: BinaryRecord {
    public static var recordKind: UInt8 { RecordKind.profilingAttempt }
    private static let requiredTags = tagMask(1, 2, 3, 4, 9)

    public func encode(to writer: inout BinaryRecordWriter) {
        writer.string(1, reference)
        writer.string(2, clientId)
        writer.string(3, cardRegistrationId)
        writer.string(4, cardId)
        writer.string(5, ipAddress)
        writer.string(6, userAgent)
        writer.string(7, acceptLanguage)
        if !device.isEmpty { writer.map(8, device) }
        writer.int(9, creationDate)
    }

    public init(from reader: inout BinaryRecordReader) throws {
        self.init(
            reference: "", clientId: "", cardRegistrationId: "", cardId: "", ipAddress: nil, userAgent: nil,
            acceptLanguage: nil, device: [:], creationDate: 0)
        var seen: UInt64 = 0
        while let tag = try reader.next() {
            switch tag {
            case 1: reference = try reader.string()
            case 2: clientId = try reader.string()
            case 3: cardRegistrationId = try reader.string()
            case 4: cardId = try reader.string()
            case 5: ipAddress = try reader.string()
            case 6: userAgent = try reader.string()
            case 7: acceptLanguage = try reader.string()
            case 8: try reader.mapEntry(into: &device)
            case 9: creationDate = try reader.int64()
            default: try reader.skip()  // unknown: its bit is never a required one (an overshift is 0)
            }
            seen |= 1 << UInt64(tag)
        }
        try checkRequired(seen, Self.requiredTags, Self.self)
    }
}

extension Card: BinaryRecord {
    public static var recordKind: UInt8 { RecordKind.card }
    private static let requiredTags = tagMask(1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 16, 17)

    public func encode(to writer: inout BinaryRecordWriter) {
        writer.string(1, id)
        writer.string(2, clientId)
        writer.string(3, userId)
        writer.string(4, currency)
        writer.string(5, cardType)
        writer.string(6, cardProvider)
        writer.string(7, brand)
        writer.string(8, alias)
        writer.string(9, expirationDate)
        writer.string(10, country)
        writer.bool(11, active)
        writer.string(12, validity.rawValue)
        writer.string(13, fingerprint)
        writer.string(14, cardHolderName)
        writer.string(15, tag)
        writer.int(16, creationDate)
        writer.string(17, cardRegistrationId)
    }

    public init(from reader: inout BinaryRecordReader) throws {
        self.init(
            id: "", clientId: "", userId: "", currency: "", cardType: "", cardProvider: "", brand: "", alias: "",
            expirationDate: "", country: nil, active: false, validity: .unknown, fingerprint: "", cardHolderName: nil,
            tag: nil, creationDate: 0, cardRegistrationId: "")
        var seen: UInt64 = 0
        while let field = try reader.next() {
            switch field {
            case 1: id = try reader.string()
            case 2: clientId = try reader.string()
            case 3: userId = try reader.string()
            case 4: currency = try reader.string()
            case 5: cardType = try reader.string()
            case 6: cardProvider = try reader.string()
            case 7: brand = try reader.string()
            case 8: alias = try reader.string()
            case 9: expirationDate = try reader.string()
            case 10: country = try reader.string()
            case 11: active = try reader.bool()
            case 12: validity = try known(try reader.string(), 12)
            case 13: fingerprint = try reader.string()
            case 14: cardHolderName = try reader.string()
            case 15: tag = try reader.string()
            case 16: creationDate = try reader.int64()
            case 17: cardRegistrationId = try reader.string()
            default: try reader.skip()  // unknown: its bit is never a required one (an overshift is 0)
            }
            seen |= 1 << UInt64(field)
        }
        try checkRequired(seen, Self.requiredTags, Self.self)
    }
}
