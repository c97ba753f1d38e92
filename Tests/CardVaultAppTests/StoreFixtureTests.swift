import CardKit
import Foundation
import Testing
import VaultCore
import VaultCrypto

@testable import Checkout
@testable import Payments
@testable import VaultStore

/// The JSON records of earlier builds: the store written by the 5a42ffc release binary (Tests/Fixtures/store-5a42ffc,
/// made by Tests/Fixtures/make_store_fixture.py) opens, every record (merchant API and hosted checkout) reads back,
/// and rewrap and compaction move its JSON records to the binary format.
@Suite struct StoreFixtureTests {
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
        // Git keeps no modes but 644/755, and the store refuses keys others can read: give the copy the
        // modes `keys init` gives (directories 0700, key files 0600).
        let files = FileManager.default
        for directory in [target, target + "/data", target + "/keys"] {
            try files.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory)
        }
        for name in try files.contentsOfDirectory(atPath: target + "/keys") {
            try files.setAttributes([.posixPermissions: 0o600], ofItemAtPath: target + "/keys/" + name)
        }
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
        case Collections.idempotency:
            #expect(!(try RecordCoding.decode(IdempotencyLedger.Entry.self, from: record)).requestDigest.isEmpty)
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
                random: RandomPool(),
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
        #expect(
            try await services.cardRegistrations.get(clientId: client, id: manifest.createdRegistration).status
                == .created)
        #expect(
            try await services.cardRegistrations.get(clientId: client, id: manifest.failedRegistration).status == .error
        )
        for (name, id) in manifest.payIns {
            #expect(try await services.payIns.get(clientId: client, id: id).status == manifest.payInStatuses[name])
        }
        #expect(
            try await services.payIns.get(clientId: client, id: manifest.validation, purpose: .cardValidation).cardId
                == manifest.cards[0])
        let attempt = try await services.cards.profilingAttempt(
            clientId: client, reference: manifest.profilingReference)
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
            #expect(
                try RecordCoding.decode(CardRegistration.self, from: old)
                    == RecordCoding.decode(CardRegistration.self, from: new))
        case Collections.cards:
            #expect(try RecordCoding.decode(Card.self, from: old) == RecordCoding.decode(Card.self, from: new))
        case Collections.profilingAttempts:
            #expect(
                try RecordCoding.decode(ProfilingAttempt.self, from: old)
                    == RecordCoding.decode(ProfilingAttempt.self, from: new))
        case PayInService.payIns, PayInService.validations:
            #expect(try RecordCoding.decode(PayIn.self, from: old) == RecordCoding.decode(PayIn.self, from: new))
        case PayInService.refunds:
            #expect(try RecordCoding.decode(Refund.self, from: old) == RecordCoding.decode(Refund.self, from: new))
        case PayInService.assessments:
            #expect(
                try RecordCoding.decode(PayInAssessment.self, from: old)
                    == RecordCoding.decode(PayInAssessment.self, from: new))
        case Collections.idempotency:
            let (before, after) = (
                try RecordCoding.decode(IdempotencyLedger.Entry.self, from: old),
                try RecordCoding.decode(IdempotencyLedger.Entry.self, from: new)
            )
            #expect(before.requestDigest == after.requestDigest && before.createdAt == after.createdAt)
            #expect(before.response == after.response)
        default:
            Issue.record("no content check for \(old.collection)")
        }
    }
}
