import CardKit
import Foundation
import Testing
import VaultCore
import VaultCrypto
@testable import Payments
@testable import VaultStore

/// The binary record codec, and the JSON records of earlier builds: the store written by the 5a42ffc release
/// binary (Tests/Fixtures/store-5a42ffc, made by Tests/Fixtures/make_store_fixture.py) opens, every record reads
/// back, and rewrap and compaction move its JSON records to the binary format.
@Suite struct StoredRecordFormatTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/store-5a42ffc").path

    struct Manifest: Decodable {
        var clientId: String
        var natural: String
        var legal: String
        var wallet: String
        var balance: Int64
        var cards: [String]
        var createdRegistration: String
        var failedRegistration: String
        var payIns: [String: String]
        var payInStatuses: [String: String]
        var refund: String
        var validation: String
        var profilingReference: String
    }

    /// A copy of the fixture in a fresh temporary directory (the store writes into its directory).
    static func copyFixture() throws -> (data: String, keys: String, manifest: Manifest) {
        let target = NSTemporaryDirectory() + "cv-fixture-" + UUID().uuidString
        try FileManager.default.copyItem(atPath: fixture, toPath: target)
        let manifest = try JSONDecoder().decode(
            Manifest.self, from: Data(contentsOf: URL(fileURLWithPath: fixture + "/manifest.json")))
        return (target + "/data", target + "/keys", manifest)
    }

    /// Every live record of the store, with its collection.
    static func allRecords(_ store: EncryptedFileStore) throws -> [Record] {
        let keys = store.withState { state in
            state.index.liveEntries(in: 0..<state.index.entries.count).map {
                (state.index.collectionName(of: $0), state.index.id(of: $0))
            }
        }
        return try keys.map { collection, id in try #require(try store.read(collection, id: id)) }
    }

    /// Decodes `record` as the type its collection holds; fails on a collection this test does not know, so
    /// that a new record kind gets a check here.
    static func check(_ record: Record) throws {
        let value = record.value
        func json() throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(value)) as? [String: Any])
        }
        switch record.collection {
        case Collections.clients: _ = try RecordCoding.decode(Client.self, from: record)
        case Collections.users: _ = try RecordCoding.decode(User.self, from: record)
        case Collections.wallets: _ = try RecordCoding.decode(Wallet.self, from: record)
        case Collections.registrations: _ = try RecordCoding.decode(CardRegistration.self, from: record)
        case Collections.cards: _ = try RecordCoding.decode(Card.self, from: record)
        case Collections.profilingAttempts: _ = try RecordCoding.decode(ProfilingAttempt.self, from: record)
        case PayInService.payIns, PayInService.validations: _ = try RecordCoding.decode(PayIn.self, from: record)
        case PayInService.refunds: _ = try RecordCoding.decode(Refund.self, from: record)
        case PayInService.assessments: _ = try RecordCoding.decode(PayInAssessment.self, from: record)
        case Collections.vault: #expect(CardNumberRecord.decode(value) != nil)
        case Collections.bearerTokens: #expect(try json()["clientId"] as? String != nil)
        case Collections.idempotency: #expect(try json()["requestDigest"] != nil)
        case Collections.walletsByUser, Collections.cardsByUser, Collections.cardsByFingerprint, PayInService.byCard,
            PayInService.refundsByPayIn, PayInService.awaiting, PayInRiskHistory.failures:
            #expect(value.isEmpty || value.allSatisfy { $0 >= 0x20 && $0 < 0x7F })
        case PayInRiskHistory.attempts: #expect(!value.isEmpty)
        case PayInRiskHistory.successes: #expect(Int64(String(decoding: value, as: UTF8.self)) != nil)
        case CheckoutService.Collection.registrations:
            _ = try CheckoutService.decode(CheckoutRegistration.self, record)
        case CheckoutService.Collection.sessions: _ = try CheckoutService.decode(CheckoutSession.self, record)
        case CheckoutService.Collection.transactions:
            // A pointer from the transaction id to its session: the session id, as text.
            #expect(!value.isEmpty && value.allSatisfy { $0 > 0x20 && $0 < 0x7F })
        default:
            Issue.record("no check for collection \(record.collection)")
        }
    }

    /// The services over the fixture's store, on a clock just after the fixture was written (so that its pending
    /// challenge has not expired: reading an expired one completes it).
    static func services(_ store: EncryptedFileStore, manifest: Manifest) throws -> MerchantServices {
        let pending = try #require(
            try store.read(PayInService.payIns, id: Identifier.scoped(manifest.clientId, manifest.payIns["pending"]!)))
        let written = try RecordCoding.decode(PayIn.self, from: pending).creationDate
        return MerchantServices(
            environment: PaymentsEnvironment(
                store: store, clock: ManualClock(Date(timeIntervalSince1970: TimeInterval(written + 1))),
                fingerprintKeys: store.fingerprintKeys,
                configuration: PaymentsConfiguration(publicBaseURL: "http://127.0.0.1:1"), logger: .disabled))
    }

    /// What the fixture's manifest says was created reads back through the services.
    static func checkManifest(_ store: EncryptedFileStore, _ manifest: Manifest) async throws {
        let services = try services(store, manifest: manifest)
        let client = manifest.clientId
        #expect(try await services.wallets.get(clientId: client, id: manifest.wallet).balance == manifest.balance)
        #expect(try await services.users.get(clientId: client, id: manifest.natural).personType == .natural)
        #expect(try await services.users.get(clientId: client, id: manifest.legal).personType == .legal)
        for id in manifest.cards {
            let card = try await services.cards.get(clientId: client, id: id)
            #expect(card.alias.hasPrefix("497010"))
            let (pan, _) = try await services.cards.vaultedNumber(clientId: client, cardId: id)
            #expect(pan.alias == card.alias)
        }
        #expect(try await services.cards.get(clientId: client, id: manifest.cards[2]).active == false)
        #expect(try await services.cardRegistrations.get(clientId: client, id: manifest.createdRegistration).status == .created)
        #expect(try await services.cardRegistrations.get(clientId: client, id: manifest.failedRegistration).status == .error)
        for (name, id) in manifest.payIns {
            #expect(try await services.payIns.get(clientId: client, id: id).status == manifest.payInStatuses[name])
        }
        #expect(try await services.payIns.get(clientId: client, id: manifest.validation, purpose: .cardValidation).cardId
            == manifest.cards[0])
        let attempt = try await services.cards.profilingAttempt(clientId: client, reference: manifest.profilingReference)
        #expect(attempt.userAgent?.hasPrefix("fixture-browser/1 (") == true && attempt.acceptLanguage == "fr-FR")
    }

    @Test func storeWrittenBy5a42ffcOpensAndEveryRecordReadsBack() async throws {
        let (data, keys, manifest) = try Self.copyFixture()
        let store = try EncryptedFileStore.open(directory: data, keysDirectory: keys)
        defer { store.close() }
        #expect(store.recovery.damage.isEmpty && store.recovery.corruptedRecords == 0)
        let records = try Self.allRecords(store)
        let collections = Set(records.map(\.collection))
        for expected in [
            Collections.clients, Collections.users, Collections.wallets, Collections.registrations, Collections.cards,
            Collections.vault, Collections.profilingAttempts, Collections.idempotency, Collections.bearerTokens,
            PayInService.payIns, PayInService.validations, PayInService.refunds, PayInService.assessments,
            PayInRiskHistory.attempts, CheckoutService.Collection.sessions,
        ] {
            #expect(collections.contains(expected), "the fixture holds no \(expected) record")
        }
        #expect(records.filter { RecordCoding.isBinary($0.value) }.isEmpty, "5a42ffc wrote JSON only")
        for record in records { try Self.check(record) }
        try await Self.checkManifest(store, manifest)
    }

    /// Rewrap (after a data key rotation) moves every JSON record with a binary codec to the binary format, with
    /// the same content; records without a codec stay JSON; everything reads back as before.
    @Test func rewrapMovesJSONRecordsToTheBinaryFormat() async throws {
        let (data, keys, manifest) = try Self.copyFixture()
        var options = FileStoreOptions()
        options.valueUpgrade = StoredRecordFormat.upgrade
        let store = try EncryptedFileStore.open(directory: data, keysDirectory: keys, options: options)
        let before = try Self.allRecords(store)
        try store.rotateDataKey()
        let report = try await store.rewrap()
        #expect(report.remaining == 0 && report.failures.isEmpty)
        try Self.checkUpgraded(before: before, after: try Self.allRecords(store))
        try await Self.checkManifest(store, manifest)
        store.close()
        // And after reopening (replaying the relocation frames).
        let reopened = try EncryptedFileStore.open(directory: data, keysDirectory: keys, options: options)
        defer { reopened.close() }
        try Self.checkUpgraded(before: before, after: try Self.allRecords(reopened))
        try await Self.checkManifest(reopened, manifest)
    }

    /// Compaction of a closed segment does the same.
    @Test func compactionMovesJSONRecordsToTheBinaryFormat() async throws {
        let (data, keys, manifest) = try Self.copyFixture()
        var options = FileStoreOptions()
        options.valueUpgrade = StoredRecordFormat.upgrade
        options.segmentBytes = 4096  // the next write starts segment 2, closing the fixture's segment 1
        options.automaticCompaction = false
        let store = try EncryptedFileStore.open(directory: data, keysDirectory: keys, options: options)
        defer { store.close() }
        let before = try Self.allRecords(store)
        try await store.put("test-marker", id: "x", value: [1])
        let report = try await store.compact()
        #expect(report.segmentsRemoved == 1)
        let after = try Self.allRecords(store).filter { $0.collection != "test-marker" }
        try Self.checkUpgraded(before: before, after: after)
        try await Self.checkManifest(store, manifest)
    }

    static func checkUpgraded(before: [Record], after: [Record]) throws {
        #expect(before.count == after.count)
        let byKey = Dictionary(uniqueKeysWithValues: after.map { ($0.collection + "/" + $0.id, $0) })
        var upgraded = 0
        for old in before {
            let new = try #require(byKey[old.collection + "/" + old.id])
            #expect(new.version == old.version)
            if RecordCoding.binaryType(forCollection: old.collection) != nil {
                #expect(RecordCoding.isBinary(new.value), "\(old.collection) stayed JSON")
                upgraded += 1
                try expectSameContent(old, new)
            } else {
                #expect(new.value == old.value)
            }
            try check(new)
        }
        #expect(upgraded >= 10)
    }

    static func expectSameContent(_ old: Record, _ new: Record) throws {
        switch old.collection {
        case Collections.wallets:
            #expect(try RecordCoding.decode(Wallet.self, from: old) == RecordCoding.decode(Wallet.self, from: new))
        case Collections.registrations:
            #expect(try RecordCoding.decode(CardRegistration.self, from: old)
                == RecordCoding.decode(CardRegistration.self, from: new))
        case Collections.cards:
            #expect(try RecordCoding.decode(Card.self, from: old) == RecordCoding.decode(Card.self, from: new))
        case Collections.profilingAttempts:
            #expect(try RecordCoding.decode(ProfilingAttempt.self, from: old)
                == RecordCoding.decode(ProfilingAttempt.self, from: new))
        case PayInService.payIns, PayInService.validations:
            #expect(try RecordCoding.decode(PayIn.self, from: old) == RecordCoding.decode(PayIn.self, from: new))
        case PayInService.refunds:
            #expect(try RecordCoding.decode(Refund.self, from: old) == RecordCoding.decode(Refund.self, from: new))
        case PayInService.assessments:
            #expect(try RecordCoding.decode(PayInAssessment.self, from: old)
                == RecordCoding.decode(PayInAssessment.self, from: new))
        default:
            Issue.record("no content check for \(old.collection)")
        }
    }

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
            cardId: "card_1", tokenDigest: Array(0..<32), brand: "visa", cardProvider: "VISA", alias: "497010XXXXXX1119",
            expirationDate: "1229", fingerprint: String(repeating: "ab", count: 16), country: nil,
            profilingReference: "pa_1", tokenizedAt: Int64.max))

    @Test func roundTripsEveryField() throws {
        let encoded = try RecordCoding.encode(Self.sampleRegistration)
        #expect(try RecordCoding.decode(CardRegistration.self, from: Self.record("r", encoded)) == Self.sampleRegistration)
        let wallet = Wallet(
            id: "w", clientId: "c", ownerId: "o", description: "", currency: "EUR", balance: Int64.min, tag: nil,
            creationDate: 0)
        #expect(try RecordCoding.decode(Wallet.self, from: Self.record("w", try RecordCoding.encode(wallet))) == wallet)
        let attempt = ProfilingAttempt(
            reference: "pa", clientId: "c", cardRegistrationId: "r", cardId: "card", ipAddress: "::1", userAgent: nil,
            acceptLanguage: "fr", device: ["screenWidth": "1024", "deviceId": String(repeating: "x", count: 200)],
            creationDate: 7)
        #expect(try RecordCoding.decode(ProfilingAttempt.self, from: Self.record("p", try RecordCoding.encode(attempt)))
            == attempt)
        // The binary form is much smaller than the JSON one.
        #expect(encoded.count * 2 < (try JSONEncoder().encode(Self.sampleRegistration)).count)
    }

    @Test func unknownTagsAreSkipped() throws {
        var bytes = try RecordCoding.encode(Self.sampleRegistration)
        var writer = BinaryRecordWriter()
        writer.unsigned(99, 12345)
        writer.string(1000, "a field of a newer build")
        writer.nested(77) { $0.int(1, -1) }
        bytes.insert(contentsOf: writer.bytes, at: BinaryRecordFormat.headerSize)
        bytes += writer.bytes
        #expect(try RecordCoding.decode(CardRegistration.self, from: Self.record("r", bytes)) == Self.sampleRegistration)
    }

    @Test func damagedOrForeignRecordsAreRefusedNotMisread() throws {
        let encoded = try RecordCoding.encode(Self.sampleRegistration)
        // Another record kind.
        #expect(throws: BinaryRecordError.self) { try RecordCoding.decode(Wallet.self, from: Self.record("w", encoded)) }
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
            for _ in 0..<3 { damaged[Int.random(in: 3..<damaged.count, using: &random)] = UInt8.random(in: 0...255, using: &random) }
            _ = try? RecordCoding.decode(CardRegistration.self, from: Self.record("r", damaged))
        }
    }
}
