import Foundation
import Testing

@testable import Payments
@testable import VaultStore

/// The hand-written codecs of the tokenization path's records (CardRecordCodecs.swift) write the bytes the key-path
/// schema wrote, field for field, and read records whatever the order of their fields.
@Suite struct CardRecordCodecTests {
    static func record(_ value: [UInt8]) -> Record { Record(collection: "c", id: "x", version: 1, value: value) }

    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            out.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return out
    }

    // The expected bytes come from an independent encoder of the format (BinaryRecordFormat's description: varint
    // keys `tag << 3 | wire`, zigzag integers, length-delimited strings and nested lists), field order as listed
    // by the schema the codecs replace.
    static let registrationBytes = bytes(
        "b701010a09636172647265675f31120473686f701a06757365725f3122034555522a1243425f564953415f4d415354455243"
            + "415244320774616720e29c93380942036b65794a046461746162110a063030303030301207537563636573736a0743524541"
            + "5445447806820181010a06636172645f311220000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e"
            + "1f1a04766973612204564953412a10343937303130585858585858313131393204313232393a206162616261626162616261"
            + "6261626162616261626162616261626162616261624a0470615f3150feffffffffffffffff01")

    static let attempt = ProfilingAttempt(
        reference: "pa", clientId: "c", cardRegistrationId: "r", cardId: "card", ipAddress: "::1", userAgent: nil,
        acceptLanguage: "fr", device: ["screenWidth": "1024", "deviceId": "xxx"], creationDate: 7)
    static let attemptBytes = bytes(
        "b701020a0270611201631a01722204636172642a033a3a313a026672420f0a0864657669636549641203787878421"
            + "30a0b73637265656e5769647468120431303234480e")

    static let card = Card(
        id: "card_1", clientId: "shop", userId: "user_1", currency: "EUR", cardType: "CB_VISA_MASTERCARD",
        cardProvider: "VISA", brand: "visa", alias: "497010XXXXXX1119", expirationDate: "1229", country: "FRA",
        active: true, validity: .unknown, fingerprint: String(repeating: "ab", count: 16), cardHolderName: nil,
        tag: "t", creationDate: 1_700_000_000, cardRegistrationId: "cardreg_1")
    static let cardBytes = bytes(
        "b701030a06636172645f31120473686f701a06757365725f3122034555522a1243425f564953415f4d415354455243415244320456"
            + "4953413a04766973614210343937303130585858585858313131394a0431323239520346524158016207554e4b4e4f574e6a20"
            + "61626162616261626162616261626162616261626162616261626162616261627a0174800180c49fd50c8a0109636172647265"
            + "675f31")

    @Test func writeTheSchemaBytesAndReadThemBack() throws {
        let registration = StoredRecordFormatTests.sampleRegistration
        #expect(try RecordCoding.encode(registration) == Self.registrationBytes)
        #expect(
            try RecordCoding.decode(CardRegistration.self, from: Self.record(Self.registrationBytes)) == registration)
        #expect(try RecordCoding.encode(Self.attempt) == Self.attemptBytes)
        #expect(try RecordCoding.decode(ProfilingAttempt.self, from: Self.record(Self.attemptBytes)) == Self.attempt)
        #expect(try RecordCoding.encode(Self.card) == Self.cardBytes)
        #expect(try RecordCoding.decode(Card.self, from: Self.record(Self.cardBytes)) == Self.card)
    }

    @Test func readFieldsInAnyOrderAndRefuseAMissingRequiredOne() throws {
        let header = Array(Self.cardBytes.prefix(BinaryRecordFormat.headerSize))
        // Split the card into its fields by walking the keys (each field here is a short string, a varint or a bool).
        var parts: [[UInt8]] = []
        var index = BinaryRecordFormat.headerSize
        let value = Self.cardBytes
        while index < value.count {
            let start = index
            var key: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                key |= UInt64(value[index] & 0x7F) << shift
                index += 1
                if value[index - 1] < 0x80 { break }
                shift += 7
            }
            if key & 7 == 0 {
                while value[index] >= 0x80 { index += 1 }
                index += 1
            } else {
                let length = Int(value[index])
                index += 1 + length
            }
            parts.append(Array(value[start..<index]))
        }
        #expect(parts.count == 16)
        let reversed = header + parts.reversed().flatMap { $0 }
        #expect(try RecordCoding.decode(Card.self, from: Self.record(reversed)) == Self.card)
        // Without its fingerprint (tag 13, the 13th field written), a card is refused, naming the tag only.
        let withoutFingerprint = header + parts.enumerated().filter { $0.offset != 12 }.flatMap { $0.element }
        #expect(throws: BinaryRecordError.self) {
            try RecordCoding.decode(Card.self, from: Self.record(withoutFingerprint))
        }
        do {
            _ = try RecordCoding.decode(Card.self, from: Self.record(withoutFingerprint))
        } catch let error as BinaryRecordError {
            #expect(error.description.contains("13"))
            #expect(!error.description.contains("abab"))
        }
        // Without its optional country (tag 10), it reads with none.
        let withoutCountry = header + parts.enumerated().filter { $0.offset != 9 }.flatMap { $0.element }
        var expected = Self.card
        expected.country = nil
        #expect(try RecordCoding.decode(Card.self, from: Self.record(withoutCountry)) == expected)
    }
}
