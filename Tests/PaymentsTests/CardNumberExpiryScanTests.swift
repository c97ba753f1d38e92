import Foundation
import Testing
import VaultCore
import VaultCrypto

@testable import Payments
@testable import VaultStore

#if canImport(Glibc)
import Glibc
#endif

/// An abandoned tokenized registration's card number is gone from the store's files after its access key expired,
/// the sweeper ran and the store compacted: no frame of the data files holds the vault record any more, and the
/// number's digits appear nowhere in them (ASCII or BCD).
@Suite struct CardNumberExpiryScanTests {
    static let abandonedNumber = "4970101122334455"

    /// The `(kind, collection, id)` of every frame in the segment files of `directory`.
    func frames(in directory: String) throws -> [(RecordFrame.Kind, String, String)] {
        var found: [(RecordFrame.Kind, String, String)] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: directory + "/segments") {
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/segments/" + name)))
            _ = bytes.withUnsafeBytes { raw in
                SegmentScanner.scan(raw, from: 0) { batch in
                    for frame in batch { found.append((frame.header.kind, frame.collection, frame.id)) }
                }
            }
        }
        return found
    }

    /// Every regular file under `directory`, read whole.
    func contents(of directory: String) -> [(String, [UInt8])] {
        var files: [(String, [UInt8])] = []
        let enumerator = FileManager.default.enumerator(atPath: directory)
        while let name = enumerator?.nextObject() as? String {
            let path = directory + "/" + name
            if let data = FileManager.default.contents(atPath: path) { files.append((name, [UInt8](data))) }
        }
        return files
    }

    func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }

    @Test func theAbandonedCardNumberLeavesTheDataFiles() async throws {
        var template = Array("/tmp/cv-lifetimes-XXXXXX".utf8CString)
        let root = try #require(mkdtemp(&template).map { String(cString: $0) })
        defer { try? FileManager.default.removeItem(atPath: root) }
        try KeyRing.createMasterKey(keysDirectory: root + "/keys")
        let clock = ManualClock()
        var options = FileStoreOptions()
        options.segmentBytes = 64 << 10
        options.automaticCompaction = false
        options.clock = clock
        let store = try EncryptedFileStore.open(
            directory: root + "/data", keysDirectory: root + "/keys", options: options)
        defer { store.close() }
        let environment = PaymentsEnvironment(
            store: store, clock: clock, random: RandomPool.shared, fingerprintKeys: store.fingerprintKeys,
            configuration: PaymentsConfiguration(publicBaseURL: "https://vault.example"))
        let services = MerchantServices(environment: environment)
        var fields = UserFields()
        fields.firstName = "Ada"
        fields.lastName = "Lovelace"
        fields.email = "ada@example.com"
        let user = try await services.users.create(clientId: "shop", type: .natural, sca: false, fields: fields)
        let registration = try await services.cardRegistrations.create(
            clientId: "shop", userId: user.id, currency: "EUR", cardType: nil, tag: nil)
        let result = try await services.cardRegistrations.tokenize(
            clientId: "shop", id: registration.id,
            form: TokenizationForm(
                data: registration.preregistrationData, accessKeyRef: registration.accessKey,
                cardNumber: Self.abandonedNumber, cardExpirationDate: "1229", cardCvx: "123"),
            signals: DeviceSignals(ipAddress: "192.0.2.1"))
        guard case .success = result else {
            Issue.record("tokenization failed: \(result)")
            return
        }
        let pendingCard = try #require(
            try await services.cardRegistrations.get(clientId: "shop", id: registration.id).pending?.cardId)
        let vaultId = Identifier.scoped("shop", pendingCard)
        func vaultPuts() throws -> Int {
            try frames(in: root + "/data").filter { $0.0 == .put && $0.1 == Collections.vault && $0.2 == vaultId }.count
        }
        #expect(try vaultPuts() == 1)  // the number is on disk (sealed) before its lifetime ends

        clock.advance(by: environment.configuration.accessKeyLifetime + 1)
        let sweeper = RecordSweeper(
            store: store, clock: clock, lifetimes: services.recordLifetimes, rounds: services.sweepRounds)
        let report = try await sweeper.sweep()
        #expect(report.expired[Collections.registrations] == 1)
        #expect(try await store.get(Collections.vault, id: vaultId) == nil)

        // Fill the active segment so the one holding the number closes, then compact.
        for index in 0..<400 {
            try await store.put("filler", id: "f\(index)", value: [UInt8](repeating: UInt8(index % 251), count: 512))
        }
        for index in 0..<400 { try await store.delete("filler", id: "f\(index)") }
        try await store.put("filler", id: "last", value: [UInt8](repeating: 1, count: 70 << 10 / 2))
        try await store.put("filler", id: "last2", value: [UInt8](repeating: 2, count: 70 << 10 / 2))
        let compaction = try await store.compact()
        #expect(compaction.segmentsRemoved > 0)
        #expect(try vaultPuts() == 0)

        let digits = Array(Self.abandonedNumber.utf8)
        let bcd = stride(from: 0, to: digits.count, by: 2).map { ((digits[$0] - 0x30) << 4) | (digits[$0 + 1] - 0x30) }
        for (name, bytes) in contents(of: root + "/data") {
            #expect(!contains(bytes, digits), "card number digits in \(name)")
            #expect(!contains(bytes, bcd), "card number BCD in \(name)")
        }
    }
}
