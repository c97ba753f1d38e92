import Foundation
import Testing
import VaultCore

@testable import Payments
@testable import VaultStore

/// The binary record codec (``BinaryRecordFormat``) and the per-type codecs of the stored records.
@Suite struct StoredRecordFormatTests {
    // MARK: The codec

    static func record(_ collection: String, _ value: [UInt8]) -> Record {
        Record(collection: collection, id: "x", version: 1, value: value)
    }

    @Test func servicesWriteBinaryRecordsAndTypesWithoutACodecStayJSON() async throws {
        let fixture = PaymentsFixture()
        let registration = try await fixture.registration()
        guard case .success = try await fixture.tokenize(registration, fixture.form(registration)) else {
            Issue.record("tokenization failed")
            return
        }
        let stored = try #require(
            try await fixture.store.get(Collections.registrations, id: Identifier.scoped("shop", registration.id)))
        #expect(Array(stored.value.prefix(3)) == [0xB7, 1, RecordKind.cardRegistration])
        let read = try await fixture.services.cardRegistrations.get(clientId: "shop", id: registration.id)
        #expect(read.pending != nil && read.id == registration.id)
        let user = try #require(
            try await fixture.store.get(Collections.users, id: Identifier.scoped("shop", registration.userId)))
        #expect(user.value.first == UInt8(ascii: "{"))
    }

    static let sampleRegistration = CardRegistration(
        id: "cardreg_1", clientId: "shop", userId: "user_1", currency: "EUR", cardType: "CB_VISA_MASTERCARD",
        tag: "tag ✓", creationDate: -5, accessKey: "key", preregistrationData: "data", registrationData: nil,
        cardId: nil, result: .success, status: .created, cardHolderName: nil, failedAttempts: 3,
        pending: PendingCard(
            cardId: "card_1", tokenDigest: Array(0..<32), brand: "visa", cardProvider: "VISA",
            alias: "497010XXXXXX1119",
            expirationDate: "1229", fingerprint: String(repeating: "ab", count: 16), country: nil,
            profilingReference: "pa_1", tokenizedAt: Int64.max))

    @Test func roundTripsEveryField() throws {
        let encoded = try RecordCoding.encode(Self.sampleRegistration)
        #expect(
            try RecordCoding.decode(CardRegistration.self, from: Self.record("r", encoded)) == Self.sampleRegistration)
        let wallet = Wallet(
            id: "w", clientId: "c", ownerId: "o", description: "", currency: "EUR", balance: Int64.min, tag: nil,
            creationDate: 0)
        #expect(try RecordCoding.decode(Wallet.self, from: Self.record("w", try RecordCoding.encode(wallet))) == wallet)
        let attempt = ProfilingAttempt(
            reference: "pa", clientId: "c", cardRegistrationId: "r", cardId: "card", ipAddress: "::1", userAgent: nil,
            acceptLanguage: "fr", device: ["screenWidth": "1024", "deviceId": String(repeating: "x", count: 200)],
            creationDate: 7)
        #expect(
            try RecordCoding.decode(ProfilingAttempt.self, from: Self.record("p", try RecordCoding.encode(attempt)))
                == attempt)
        // The binary form is much smaller than the JSON one.
        #expect(encoded.count * 2 < (try JSONEncoder().encode(Self.sampleRegistration)).count)
    }

    /// Idempotency entries hold a response body: binary since their codec came, JSON (the body an array of numbers)
    /// before, and both read back; rewrap and compaction move a JSON one to the binary form.
    @Test func idempotencyEntriesAreBinaryAndJSONOnesStillOpen() async throws {
        let fixture = PaymentsFixture()
        let ledger = fixture.services.idempotency
        #expect(
            try await ledger.begin(clientId: "shop", key: "format-key-000001", method: "POST", path: "/x", body: [])
                == .proceed)
        let response = StoredResponse(
            statusCode: 200, contentType: "application/json", body: Array("{\"Id\":\"w_1\"}".utf8) + [0, 255],
            requestURL: "/v2.01/shop/wallets", date: -3)
        try await ledger.record(clientId: "shop", key: "format-key-000001", response: response)
        let stored = try #require(try await fixture.store.scanAll(Collections.idempotency).first)
        #expect(Array(stored.value.prefix(3)) == [0xB7, 1, RecordKind.idempotencyEntry])
        #expect(try await ledger.response(clientId: "shop", key: "format-key-000001") == response)

        for entry in [
            IdempotencyLedger.Entry(requestDigest: Array(0..<32), createdAt: 7, response: response),
            IdempotencyLedger.Entry(requestDigest: [], createdAt: Int64.min, response: nil),
        ] {
            let binary = try RecordCoding.encode(entry)
            let json = Array(try JSONEncoder().encode(entry))
            for value in [binary, json] {
                let read = try RecordCoding.decode(
                    IdempotencyLedger.Entry.self, from: Self.record(Collections.idempotency, value))
                #expect(read.requestDigest == entry.requestDigest && read.createdAt == entry.createdAt)
                #expect(read.response == entry.response)
            }
            #expect(RecordCoding.upgrade(collection: Collections.idempotency, value: json) == binary)
            #expect(binary.count * 2 < json.count)
        }
    }

    @Test func unknownTagsAreSkipped() throws {
        var bytes = try RecordCoding.encode(Self.sampleRegistration)
        var writer = BinaryRecordWriter()
        writer.unsigned(99, 12345)
        writer.string(1000, "a field of a newer build")
        writer.nested(77) { $0.int(1, -1) }
        bytes.insert(contentsOf: writer.bytes, at: BinaryRecordFormat.headerSize)
        bytes += writer.bytes
        #expect(
            try RecordCoding.decode(CardRegistration.self, from: Self.record("r", bytes)) == Self.sampleRegistration)
    }

    @Test func damagedOrForeignRecordsAreRefusedNotMisread() throws {
        let encoded = try RecordCoding.encode(Self.sampleRegistration)
        // Another record kind.
        #expect(throws: BinaryRecordError.self) {
            try RecordCoding.decode(Wallet.self, from: Self.record("w", encoded))
        }
        // A newer format version.
        var newer = encoded
        newer[1] = 2
        #expect(throws: BinaryRecordError.self) {
            try RecordCoding.decode(CardRegistration.self, from: Self.record("r", newer))
        }
        // No truncation traps or reads back as the whole record: a required field or a length runs out, or (cut at
        // a field boundary) a trailing optional field is missing. (The store authenticates each value whole, so a
        // stored value is never cut short; this is about the decoder's bounds.)
        var refused = 0
        for length in 0..<encoded.count {
            let cut = Array(encoded.prefix(length))
            let decoded = try? RecordCoding.decode(CardRegistration.self, from: Self.record("r", cut))
            #expect(decoded != Self.sampleRegistration)
            if decoded == nil { refused += 1 }
        }
        #expect(refused >= encoded.count - 4)
        // Random corruption never traps.
        var random = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            var damaged = encoded
            for _ in 0..<3 {
                damaged[Int.random(in: 3..<damaged.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            _ = try? RecordCoding.decode(CardRegistration.self, from: Self.record("r", damaged))
        }
    }
}
