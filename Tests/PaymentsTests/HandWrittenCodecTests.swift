import Foundation
import Risk
import Testing

@testable import Payments
@testable import VaultStore

// The key-path schemas that the pay-in's record, its parts and the event had before their codecs were written out
// by hand, kept here to show that the hand-written codecs write the same bytes and read each other's records.

private struct OldFunds: BinarySchema {
    var value: Funds
    static let binaryFields: [BinaryField<Self>] = [.string(1, \.value.currency), .int(2, \.value.amount)]
    static var binaryBlank: Self { Self(value: Funds(currency: "", amount: 0)) }
}

private struct OldRiskAssessment: BinarySchema {
    var value: RiskAssessment
    static let binaryFields: [BinaryField<Self>] = [
        .int(1, \.value.score), .raw(2, \.value.decision), .records(3, \.value.reasons),
    ]
    static var binaryBlank: Self { Self(value: RiskAssessment(score: 0, decision: .allow, reasons: [])) }
}

private struct OldEvent: BinarySchema {
    var value: PaymentEvent
    static let binaryFields: [BinaryField<Self>] = [
        .string(1, \.value.clientId), .string(2, \.value.resourceId), .raw(3, \.value.eventType),
        .int(4, \.value.date), .string(5, \.value.id),
    ]
    static var binaryBlank: Self {
        Self(value: PaymentEvent(clientId: "", resourceId: "", eventType: .payInNormalCreated, date: 0, id: ""))
    }
}

private struct OldPayIn: BinarySchema {
    var value: PayIn
    static let binaryFields: [BinaryField<Self>] = [
        .string(1, \.value.id), .string(2, \.value.clientId), .record(3, \.value.machine),
        .string(4, \.value.authorId), .string(5, \.value.creditedUserId), .string(6, \.value.creditedWalletId),
        .record(7, \.value.debitedFunds), .record(8, \.value.fees), .string(9, \.value.cardId),
        .record(10, \.value.cardInfo), .raw(11, \.value.secureMode), .string(12, \.value.secureModeReturnURL),
        .bool(13, \.value.secureModeNeeded), .string(14, \.value.challengeSecret), .string(15, \.value.ipAddress),
        .record(16, \.value.browserInfo), .string(17, \.value.statementDescriptor), .string(18, \.value.tag),
        .record(19, \.value.billing), .record(20, \.value.shipping), .string(21, \.value.culture),
        .string(22, \.value.profilingAttemptReference), .string(23, \.value.preferredCardNetwork),
        .string(24, \.value.paymentCategory), .record(25, \.value.risk), .string(26, \.value.fingerprint),
        .string(27, \.value.deviceId), .int(28, \.value.creationDate), .int(29, \.value.executionDate),
        .int(30, \.value.refunded), .int(31, \.value.refundedFees), .record(32, \.value.hold),
        .record(33, \.value.capturedFrom), .string(34, \.value.kind), .string(35, \.value.recurringRegistrationId),
        .string(36, \.value.walletNetwork), .string(37, \.value.walletTransactionId),
        .record(38, \.value.challengeDisplay),
    ]
    static var binaryBlank: Self { Self(value: HandWrittenCodecTests.minimalPayIn) }
}

private struct OldWallet: BinarySchema {
    var value: Wallet
    static let binaryFields: [BinaryField<Self>] = [
        .string(1, \.value.id), .string(2, \.value.clientId), .string(3, \.value.ownerId),
        .string(4, \.value.description), .string(5, \.value.currency), .int(6, \.value.balance),
        .string(7, \.value.tag), .int(8, \.value.creationDate),
    ]
    static var binaryBlank: Self {
        Self(
            value: Wallet(
                id: "", clientId: "", ownerId: "", description: "", currency: "", balance: 0, tag: nil, creationDate: 0)
        )
    }
}

private struct OldBrowserInfo: BinarySchema {
    var value: BrowserInfo
    static let binaryFields: [BinaryField<Self>] = [
        .string(1, \.value.acceptHeader), .bool(2, \.value.javaEnabled), .bool(3, \.value.javascriptEnabled),
        .string(4, \.value.language), .int(5, \.value.colorDepth), .int(6, \.value.screenHeight),
        .int(7, \.value.screenWidth), .string(8, \.value.timeZoneOffset), .string(9, \.value.userAgent),
    ]
    static var binaryBlank: Self { Self(value: BrowserInfo()) }
}

@Suite struct HandWrittenCodecTests {
    static let minimalPayIn = PayIn(
        id: "", clientId: "", machine: PayInStateMachine(purpose: .payIn), authorId: "", creditedUserId: nil,
        creditedWalletId: nil, debitedFunds: Funds(currency: "", amount: 0), fees: Funds(currency: "", amount: 0),
        cardId: "",
        cardInfo: CardInfo(bin: "", issuingBank: nil, issuerCountryCode: nil, type: nil, brand: "", subType: nil),
        secureMode: .default, secureModeReturnURL: "", secureModeNeeded: false, challengeSecret: nil, ipAddress: nil,
        browserInfo: nil, statementDescriptor: nil, tag: nil, billing: nil, shipping: nil, culture: nil,
        profilingAttemptReference: nil, preferredCardNetwork: nil, paymentCategory: nil,
        risk: RiskAssessment(score: 0, decision: .allow, reasons: []), fingerprint: "", deviceId: nil,
        creationDate: 0, executionDate: nil, refunded: 0, refundedFees: nil)

    static var fullPayIn: PayIn {
        var payIn = PayIn(
            id: "payin_1", clientId: "shop", machine: PayInStateMachine(purpose: .preauthorization),
            authorId: "user_1", creditedUserId: "user_2", creditedWalletId: "wallet_1",
            debitedFunds: Funds(currency: "EUR", amount: 1_234), fees: Funds(currency: "EUR", amount: -5),
            cardId: "card_1",
            cardInfo: CardInfo(
                bin: "497010", issuingBank: "Bank ✓", issuerCountryCode: "FR", type: "DEBIT", brand: "VISA",
                subType: "CLASSIC"),
            secureMode: .force, secureModeReturnURL: "https://shop.example/back?x=1", secureModeNeeded: true,
            challengeSecret: "secret", ipAddress: "2001:db8::1",
            browserInfo: BrowserInfo(
                acceptHeader: "text/html", javaEnabled: false, javascriptEnabled: true, language: "fr-FR",
                colorDepth: 24, screenHeight: 1080, screenWidth: 1920, timeZoneOffset: "-60", userAgent: "agent"),
            statementDescriptor: "SHOP", tag: String(repeating: "t", count: 300),
            billing: PartyAddress(firstName: "A", lastName: "B", address: Address(city: "Paris", country: "FR")),
            shipping: PartyAddress(firstName: "C"), culture: "fr", profilingAttemptReference: "pa_1",
            preferredCardNetwork: "CB", paymentCategory: "ECommerce",
            risk: RiskAssessment(
                score: 42, decision: .challenge,
                reasons: [
                    RiskReason(rule: "velocity", detail: "3 in 1h", points: 30),
                    RiskReason(rule: "country", detail: "", points: -2),
                ]),
            fingerprint: String(repeating: "ab", count: 16), deviceId: "device", creationDate: -7,
            executionDate: Int64.max, refunded: 100, refundedFees: 3)
        payIn.kind = "RECURRING"
        payIn.recurringRegistrationId = "rec_1"
        payIn.walletNetwork = "APPLEPAY"
        payIn.walletTransactionId = "tx"
        payIn.hold = PreauthorizationStateMachine(kind: .preauthorization, authorized: 1_234, now: 9)
        payIn.capturedFrom = CaptureSource(kind: .deposit, id: "deposit_1")
        payIn.challengeDisplay = ChallengeDisplay(
            amount: Funds(currency: "EUR", amount: 1), merchantName: "Shop", locale: "fr_FR")
        return payIn
    }

    static func bytes(_ value: some BinaryFields) -> [UInt8] {
        var writer = BinaryRecordWriter()
        value.encode(to: &writer)
        return writer.bytes
    }

    static func decoded<T: BinaryFields>(_ type: T.Type, _ bytes: [UInt8]) throws -> T {
        try bytes.withUnsafeBytes { buffer in
            var reader = BinaryRecordReader(buffer)
            return try T(from: &reader)
        }
    }

    /// Same bytes as the schema, and each reads the other's.
    static func expectSame<New: BinaryFields & Equatable, Old: BinarySchema>(
        _ value: New, _ old: Old, _ unwrap: (Old) -> New
    ) throws {
        let written = bytes(value)
        #expect(written == bytes(old))
        #expect(try decoded(New.self, written) == value)
        #expect(unwrap(try decoded(Old.self, written)) == value)
    }

    @Test func thePayInAndItsPartsWriteTheBytesOfTheirSchemas() throws {
        for payIn in [Self.minimalPayIn, Self.fullPayIn] {
            try Self.expectSame(payIn, OldPayIn(value: payIn)) { $0.value }
            try Self.expectSame(payIn.debitedFunds, OldFunds(value: payIn.debitedFunds)) { $0.value }
            try Self.expectSame(payIn.risk, OldRiskAssessment(value: payIn.risk)) { $0.value }
        }
        let event = PaymentEvent(
            clientId: "shop", resourceId: "payin_1", eventType: .payInNormalSucceeded, date: 1_700_000_000,
            id: "shop:0000001700000000:evt_1")
        try Self.expectSame(event, OldEvent(value: event)) { $0.value }
        // Through the record header too.
        let record = Record(
            collection: Collections.payIns, id: "x", version: 1, value: try RecordCoding.encode(Self.fullPayIn))
        #expect(try RecordCoding.decode(PayIn.self, from: record) == Self.fullPayIn)
    }

    @Test func aPayInWithoutARequiredFieldOrWithUnknownTagsIsReadAsTheSchemaReadIt() throws {
        let refused = Self.refusalsLeavingOutEachField(OldPayIn(value: Self.fullPayIn)) { $0.value }
        #expect(refused == OldPayIn.binaryFields.filter(\.isRequired).count && refused == 15)
        // The JSON types a client sent for the loose fields survive the record (tag 10).
        var loose = Self.fullPayIn.browserInfo!
        loose.alternateTypes = [.timeZoneOffsetAsNumber, .colorDepthAsText, .javaEnabledAsNumber]
        #expect(try Self.decoded(BrowserInfo.self, Self.bytes(loose)) == loose)
        // Unknown tags are skipped.
        var writer = BinaryRecordWriter()
        writer.unsigned(99, 1)
        writer.string(1000, "newer")
        let extended = writer.bytes + Self.bytes(Self.fullPayIn) + writer.bytes
        #expect(try Self.decoded(PayIn.self, extended) == Self.fullPayIn)
    }

    /// Leaves out each field of `old` in turn: the hand-written reader refuses exactly when the schema's does, and
    /// reads the same value otherwise. Returns how many were refused.
    static func refusalsLeavingOutEachField<New: BinaryFields & Equatable, Old: BinarySchema>(
        _ old: Old, _ unwrap: (Old) -> New
    ) -> Int {
        var refused = 0
        for left in Old.binaryFields {
            var writer = BinaryRecordWriter()
            for field in Old.binaryFields where field.tag != left.tag { field.encode(old, &writer) }
            let new = try? decoded(New.self, writer.bytes)
            let schema = try? decoded(Old.self, writer.bytes)
            #expect(new == schema.map(unwrap))
            if new == nil { refused += 1 }
        }
        return refused
    }

    @Test func theWalletAndBrowserWriteTheBytesOfTheirSchemas() throws {
        let wallets = [
            Wallet(
                id: "wallet_1", clientId: "shop", ownerId: "user_1", description: "Main ✓", currency: "EUR",
                balance: Int64.min + 1, tag: String(repeating: "t", count: 200), creationDate: -5),
            Wallet(
                id: "w", clientId: "c", ownerId: "o", description: "", currency: "JPY", balance: 0, tag: nil,
                creationDate: 1_700_000_000),
        ]
        for wallet in wallets {
            try Self.expectSame(wallet, OldWallet(value: wallet)) { $0.value }
            #expect(Self.refusalsLeavingOutEachField(OldWallet(value: wallet)) { $0.value } == 7)
            let record = Record(
                collection: Collections.wallets, id: "x", version: 1, value: try RecordCoding.encode(wallet))
            #expect(try RecordCoding.decode(Wallet.self, from: record) == wallet)
        }
        for browser in [BrowserInfo(), Self.fullPayIn.browserInfo!, BrowserInfo(javaEnabled: true, colorDepth: -1)] {
            try Self.expectSame(browser, OldBrowserInfo(value: browser)) { $0.value }
            #expect(Self.refusalsLeavingOutEachField(OldBrowserInfo(value: browser)) { $0.value } == 0)
        }
        // Unknown tags are skipped.
        var writer = BinaryRecordWriter()
        writer.unsigned(99, 1)
        writer.string(1000, "newer")
        #expect(try Self.decoded(Wallet.self, writer.bytes + Self.bytes(wallets[0]) + writer.bytes) == wallets[0])
        #expect(
            try Self.decoded(BrowserInfo.self, writer.bytes + Self.bytes(Self.fullPayIn.browserInfo!))
                == Self.fullPayIn.browserInfo)
    }
}
