import Foundation
public import VaultStore

// The binary codecs of the stored record types (see ``BinaryRecordFormat``). Tags are fixed forever: a field
// that goes away leaves its tag unused; a new field takes a new tag and is optional (or has a default) so that
// records written before it still decode. Types without a codec here are stored as JSON.

/// Kind bytes of the binary record header, one per record type; never reused.
enum RecordKind {
    static let cardRegistration: UInt8 = 1
    static let profilingAttempt: UInt8 = 2
    static let card: UInt8 = 3
    static let wallet: UInt8 = 4
    static let payIn: UInt8 = 5
    static let payInAssessment: UInt8 = 6
    static let refund: UInt8 = 7
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

extension ResultCode: BinaryFields {
    public func encode(to writer: inout BinaryRecordWriter) {
        writer.string(1, code)
        writer.string(2, message)
    }

    public init(from reader: inout BinaryRecordReader) throws {
        var code: String?
        var message: String?
        while let tag = try reader.next() {
            switch tag {
            case 1: code = try reader.string()
            case 2: message = try reader.string()
            default: try reader.skip()
            }
        }
        self.init(code: try required(code, "code"), message: try required(message, "message"))
    }
}

extension PendingCard: BinaryFields {
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
        var cardId: String?, tokenDigest: [UInt8]?, brand: String?, cardProvider: String?, alias: String?
        var expirationDate: String?, fingerprint: String?, country: String?, profilingReference: String?
        var tokenizedAt: Int64?
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
            default: try reader.skip()
            }
        }
        self.init(
            cardId: try required(cardId, "cardId"), tokenDigest: try required(tokenDigest, "tokenDigest"),
            brand: try required(brand, "brand"), cardProvider: try required(cardProvider, "cardProvider"),
            alias: try required(alias, "alias"), expirationDate: try required(expirationDate, "expirationDate"),
            fingerprint: try required(fingerprint, "fingerprint"), country: country,
            profilingReference: try required(profilingReference, "profilingReference"),
            tokenizedAt: try required(tokenizedAt, "tokenizedAt"))
    }
}

extension CardRegistration: BinaryRecord {
    public static var recordKind: UInt8 { RecordKind.cardRegistration }

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
        var id: String?, clientId: String?, userId: String?, currency: String?, cardType: String?, tag: String?
        var creationDate: Int64?, accessKey: String?, preregistrationData: String?, registrationData: String?
        var cardId: String?, result: ResultCode?, status: CardRegistrationStatus?, cardHolderName: String?
        var failedAttempts = 0
        var pending: PendingCard?
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
            case 13: status = try rawValue(CardRegistrationStatus.self, try reader.string(), "status")
            case 14: cardHolderName = try reader.string()
            case 15: failedAttempts = try reader.int()
            case 16: pending = try reader.record(PendingCard.self)
            default: try reader.skip()
            }
        }
        self.init(
            id: try required(id, "id"), clientId: try required(clientId, "clientId"),
            userId: try required(userId, "userId"), currency: try required(currency, "currency"),
            cardType: try required(cardType, "cardType"), tag: tag, creationDate: try required(creationDate, "creationDate"),
            accessKey: try required(accessKey, "accessKey"),
            preregistrationData: try required(preregistrationData, "preregistrationData"),
            registrationData: registrationData, cardId: cardId, result: result, status: try required(status, "status"),
            cardHolderName: cardHolderName, failedAttempts: failedAttempts, pending: pending)
    }
}

extension ProfilingAttempt: BinaryRecord {
    public static var recordKind: UInt8 { RecordKind.profilingAttempt }

    public func encode(to writer: inout BinaryRecordWriter) {
        writer.string(1, reference)
        writer.string(2, clientId)
        writer.string(3, cardRegistrationId)
        writer.string(4, cardId)
        writer.string(5, ipAddress)
        writer.string(6, userAgent)
        writer.string(7, acceptLanguage)
        writer.map(8, device)
        writer.int(9, creationDate)
    }

    public init(from reader: inout BinaryRecordReader) throws {
        var reference: String?, clientId: String?, cardRegistrationId: String?, cardId: String?
        var ipAddress: String?, userAgent: String?, acceptLanguage: String?, creationDate: Int64?
        var device: [String: String] = [:]
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
            default: try reader.skip()
            }
        }
        self.init(
            reference: try required(reference, "reference"), clientId: try required(clientId, "clientId"),
            cardRegistrationId: try required(cardRegistrationId, "cardRegistrationId"),
            cardId: try required(cardId, "cardId"), ipAddress: ipAddress, userAgent: userAgent,
            acceptLanguage: acceptLanguage, device: device, creationDate: try required(creationDate, "creationDate"))
    }
}

extension Card: BinaryRecord {
    public static var recordKind: UInt8 { RecordKind.card }

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
        var id: String?, clientId: String?, userId: String?, currency: String?, cardType: String?
        var cardProvider: String?, brand: String?, alias: String?, expirationDate: String?, country: String?
        var active: Bool?, validity: CardValidity?, fingerprint: String?, cardHolderName: String?, tag: String?
        var creationDate: Int64?, cardRegistrationId: String?
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
            case 12: validity = try rawValue(CardValidity.self, try reader.string(), "validity")
            case 13: fingerprint = try reader.string()
            case 14: cardHolderName = try reader.string()
            case 15: tag = try reader.string()
            case 16: creationDate = try reader.int64()
            case 17: cardRegistrationId = try reader.string()
            default: try reader.skip()
            }
        }
        self.init(
            id: try required(id, "id"), clientId: try required(clientId, "clientId"),
            userId: try required(userId, "userId"), currency: try required(currency, "currency"),
            cardType: try required(cardType, "cardType"), cardProvider: try required(cardProvider, "cardProvider"),
            brand: try required(brand, "brand"), alias: try required(alias, "alias"),
            expirationDate: try required(expirationDate, "expirationDate"), country: country,
            active: try required(active, "active"), validity: try required(validity, "validity"),
            fingerprint: try required(fingerprint, "fingerprint"), cardHolderName: cardHolderName, tag: tag,
            creationDate: try required(creationDate, "creationDate"),
            cardRegistrationId: try required(cardRegistrationId, "cardRegistrationId"))
    }
}

extension Wallet: BinaryRecord {
    public static var recordKind: UInt8 { RecordKind.wallet }

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

    public init(from reader: inout BinaryRecordReader) throws {
        var id: String?, clientId: String?, ownerId: String?, description: String?, currency: String?
        var balance: Int64?, tag: String?, creationDate: Int64?
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
            default: try reader.skip()
            }
        }
        self.init(
            id: try required(id, "id"), clientId: try required(clientId, "clientId"),
            ownerId: try required(ownerId, "ownerId"), description: try required(description, "description"),
            currency: try required(currency, "currency"), balance: try required(balance, "balance"), tag: tag,
            creationDate: try required(creationDate, "creationDate"))
    }
}

extension Funds: BinaryFields {
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

extension CardInfo: BinaryFields {
    public func encode(to writer: inout BinaryRecordWriter) {
        writer.string(1, bin)
        writer.string(2, issuingBank)
        writer.string(3, issuerCountryCode)
        writer.string(4, type)
        writer.string(5, brand)
        writer.string(6, subType)
    }

    public init(from reader: inout BinaryRecordReader) throws {
        var bin: String?, issuingBank: String?, issuerCountryCode: String?, type: String?, brand: String?
        var subType: String?
        while let tag = try reader.next() {
            switch tag {
            case 1: bin = try reader.string()
            case 2: issuingBank = try reader.string()
            case 3: issuerCountryCode = try reader.string()
            case 4: type = try reader.string()
            case 5: brand = try reader.string()
            case 6: subType = try reader.string()
            default: try reader.skip()
            }
        }
        self.init(
            bin: try required(bin, "bin"), issuingBank: issuingBank, issuerCountryCode: issuerCountryCode, type: type,
            brand: try required(brand, "brand"), subType: subType)
    }
}

extension BrowserInfo: BinaryFields {
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
            default: try reader.skip()
            }
        }
    }
}

extension Address: BinaryFields {
    public func encode(to writer: inout BinaryRecordWriter) {
        writer.string(1, addressLine1)
        writer.string(2, addressLine2)
        writer.string(3, city)
        writer.string(4, region)
        writer.string(5, postalCode)
        writer.string(6, country)
    }

    public init(from reader: inout BinaryRecordReader) throws {
        self.init()
        while let tag = try reader.next() {
            switch tag {
            case 1: addressLine1 = try reader.string()
            case 2: addressLine2 = try reader.string()
            case 3: city = try reader.string()
            case 4: region = try reader.string()
            case 5: postalCode = try reader.string()
            case 6: country = try reader.string()
            default: try reader.skip()
            }
        }
    }
}

extension PartyAddress: BinaryFields {
    public func encode(to writer: inout BinaryRecordWriter) {
        writer.string(1, firstName)
        writer.string(2, lastName)
        writer.record(3, address)
    }

    public init(from reader: inout BinaryRecordReader) throws {
        self.init()
        while let tag = try reader.next() {
            switch tag {
            case 1: firstName = try reader.string()
            case 2: lastName = try reader.string()
            case 3: address = try reader.record(Address.self)
            default: try reader.skip()
            }
        }
    }
}

extension RiskReason: BinaryFields {
    public func encode(to writer: inout BinaryRecordWriter) {
        writer.string(1, rule)
        writer.string(2, detail)
        writer.int(3, points)
    }

    public init(from reader: inout BinaryRecordReader) throws {
        var rule: String?, detail: String?, points: Int?
        while let tag = try reader.next() {
            switch tag {
            case 1: rule = try reader.string()
            case 2: detail = try reader.string()
            case 3: points = try reader.int()
            default: try reader.skip()
            }
        }
        self.init(rule: try required(rule, "rule"), detail: try required(detail, "detail"), points: try required(points, "points"))
    }
}

extension RiskAssessment: BinaryFields {
    public func encode(to writer: inout BinaryRecordWriter) {
        writer.int(1, score)
        writer.string(2, decision.rawValue)
        for reason in reasons { writer.record(3, reason) }
    }

    public init(from reader: inout BinaryRecordReader) throws {
        var score: Int?, decision: RiskDecision?
        var reasons: [RiskReason] = []
        while let tag = try reader.next() {
            switch tag {
            case 1: score = try reader.int()
            case 2: decision = try rawValue(RiskDecision.self, try reader.string(), "decision")
            case 3: reasons.append(try reader.record(RiskReason.self))
            default: try reader.skip()
            }
        }
        self.init(score: try required(score, "score"), decision: try required(decision, "decision"), reasons: reasons)
    }
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
        var purpose: Purpose?, stateCase: UInt64?, expiresAt: Date?, result: ResultCode?
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

extension PayIn: BinaryRecord {
    public static var recordKind: UInt8 { RecordKind.payIn }

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
    }

    public init(from reader: inout BinaryRecordReader) throws {
        var id: String?, clientId: String?, machine: PayInStateMachine?, authorId: String?
        var creditedUserId: String?, creditedWalletId: String?, debitedFunds: Funds?, fees: Funds?, cardId: String?
        var cardInfo: CardInfo?, secureMode: SecureMode?, secureModeReturnURL: String?, secureModeNeeded: Bool?
        var challengeSecret: String?, ipAddress: String?, browserInfo: BrowserInfo?, statementDescriptor: String?
        var tag: String?, billing: PartyAddress?, shipping: PartyAddress?, culture: String?
        var profilingAttemptReference: String?, preferredCardNetwork: String?, paymentCategory: String?
        var risk: RiskAssessment?, fingerprint: String?, deviceId: String?, creationDate: Int64?
        var executionDate: Int64?, refunded: Int64 = 0, refundedFees: Int64?
        while let field = try reader.next() {
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
            default: try reader.skip()
            }
        }
        self.init(
            id: try required(id, "id"), clientId: try required(clientId, "clientId"),
            machine: try required(machine, "machine"), authorId: try required(authorId, "authorId"),
            creditedUserId: creditedUserId, creditedWalletId: creditedWalletId,
            debitedFunds: try required(debitedFunds, "debitedFunds"), fees: try required(fees, "fees"),
            cardId: try required(cardId, "cardId"), cardInfo: try required(cardInfo, "cardInfo"),
            secureMode: try required(secureMode, "secureMode"),
            secureModeReturnURL: try required(secureModeReturnURL, "secureModeReturnURL"),
            secureModeNeeded: try required(secureModeNeeded, "secureModeNeeded"), challengeSecret: challengeSecret,
            ipAddress: ipAddress, browserInfo: browserInfo, statementDescriptor: statementDescriptor, tag: tag,
            billing: billing, shipping: shipping, culture: culture, profilingAttemptReference: profilingAttemptReference,
            preferredCardNetwork: preferredCardNetwork, paymentCategory: paymentCategory,
            risk: try required(risk, "risk"), fingerprint: try required(fingerprint, "fingerprint"), deviceId: deviceId,
            creationDate: try required(creationDate, "creationDate"), executionDate: executionDate, refunded: refunded,
            refundedFees: refundedFees)
    }
}

extension PayInAssessment: BinaryRecord {
    public static var recordKind: UInt8 { RecordKind.payInAssessment }

    public func encode(to writer: inout BinaryRecordWriter) {
        writer.string(1, transactionId)
        writer.int(2, score)
        writer.string(3, decision.rawValue)
        for reason in reasons { writer.record(4, reason) }
        writer.int(5, creationDate)
    }

    public init(from reader: inout BinaryRecordReader) throws {
        var transactionId: String?, score: Int?, decision: RiskDecision?, creationDate: Int64?
        var reasons: [RiskReason] = []
        while let tag = try reader.next() {
            switch tag {
            case 1: transactionId = try reader.string()
            case 2: score = try reader.int()
            case 3: decision = try rawValue(RiskDecision.self, try reader.string(), "decision")
            case 4: reasons.append(try reader.record(RiskReason.self))
            case 5: creationDate = try reader.int64()
            default: try reader.skip()
            }
        }
        self.init(
            transactionId: try required(transactionId, "transactionId"), score: try required(score, "score"),
            decision: try required(decision, "decision"), reasons: reasons,
            creationDate: try required(creationDate, "creationDate"))
    }
}

extension Refund: BinaryRecord {
    public static var recordKind: UInt8 { RecordKind.refund }

    public func encode(to writer: inout BinaryRecordWriter) {
        writer.string(1, id)
        writer.string(2, clientId)
        writer.string(3, payInId)
        writer.string(4, authorId)
        writer.string(5, creditedUserId)
        writer.string(6, debitedWalletId)
        writer.record(7, debitedFunds)
        writer.record(8, fees)
        writer.string(9, status)
        writer.record(10, result)
        writer.string(11, tag)
        writer.int(12, creationDate)
        writer.int(13, executionDate)
    }

    public init(from reader: inout BinaryRecordReader) throws {
        var id: String?, clientId: String?, payInId: String?, authorId: String?, creditedUserId: String?
        var debitedWalletId: String?, debitedFunds: Funds?, fees: Funds?, status: String?, result: ResultCode?
        var tag: String?, creationDate: Int64?, executionDate: Int64?
        while let field = try reader.next() {
            switch field {
            case 1: id = try reader.string()
            case 2: clientId = try reader.string()
            case 3: payInId = try reader.string()
            case 4: authorId = try reader.string()
            case 5: creditedUserId = try reader.string()
            case 6: debitedWalletId = try reader.string()
            case 7: debitedFunds = try reader.record(Funds.self)
            case 8: fees = try reader.record(Funds.self)
            case 9: status = try reader.string()
            case 10: result = try reader.record(ResultCode.self)
            case 11: tag = try reader.string()
            case 12: creationDate = try reader.int64()
            case 13: executionDate = try reader.int64()
            default: try reader.skip()
            }
        }
        self.init(
            id: try required(id, "id"), clientId: try required(clientId, "clientId"),
            payInId: try required(payInId, "payInId"), authorId: try required(authorId, "authorId"),
            creditedUserId: creditedUserId, debitedWalletId: try required(debitedWalletId, "debitedWalletId"),
            debitedFunds: try required(debitedFunds, "debitedFunds"), fees: try required(fees, "fees"),
            status: try required(status, "status"), result: try required(result, "result"), tag: tag,
            creationDate: try required(creationDate, "creationDate"), executionDate: executionDate)
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
        case PayInService.refunds: Refund.self
        case PayInService.assessments: PayInAssessment.self
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
