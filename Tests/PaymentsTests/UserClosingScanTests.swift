import CardKit
import Foundation
import Testing
import VaultCore
import VaultCrypto

@testable import Payments
@testable import VaultStore

#if canImport(Glibc)
import Glibc
#endif

/// After a user is closed and the file store compacted, no frame of the data files holds that user's vaulted card
/// numbers (registered cards and a number tokenized for a registration never completed), and their digits appear
/// nowhere in the files; another user's card number stays in the vault.
@Suite struct UserClosingScanTests {
    static let numbers = ["4970101122334455", "4970105181818183"]
    static let pendingNumber = "4970100000000154"
    static let otherUsersNumber = "4970107111111119"

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

    func files(under directory: String) -> [(String, [UInt8])] {
        var files: [(String, [UInt8])] = []
        let enumerator = FileManager.default.enumerator(atPath: directory)
        while let name = enumerator?.nextObject() as? String {
            if let data = FileManager.default.contents(atPath: directory + "/" + name) {
                files.append((name, [UInt8](data)))
            }
        }
        return files
    }

    func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains {
            haystack[$0..<($0 + needle.count)].elementsEqual(needle)
        }
    }

    func tokenize(
        _ services: MerchantServices, _ userId: String, _ number: String, complete: Bool
    ) async throws
        -> String
    {
        let registration = try await services.cardRegistrations.create(
            clientId: "shop", userId: userId, currency: "EUR", cardType: nil, tag: nil)
        let result = try await services.cardRegistrations.tokenize(
            clientId: "shop", id: registration.id,
            form: TokenizationForm(
                data: registration.preregistrationData, accessKeyRef: registration.accessKey, cardNumber: number,
                cardExpirationDate: "1229", cardCvx: "123"),
            signals: DeviceSignals(ipAddress: "192.0.2.1"))
        guard case .success(let token, _) = result else { throw PaymentsError(.invalidState, "tokenization failed") }
        guard complete else {
            return try #require(
                try await services.cardRegistrations.get(clientId: "shop", id: registration.id).pending?.cardId)
        }
        let done = try await services.cardRegistrations.update(
            clientId: "shop", id: registration.id, registrationData: "data=" + token.unsafeRevealed,
            cardHolderName: nil, tag: nil)
        return try #require(done.cardId)
    }

    @Test func aClosedUsersCardNumbersLeaveTheDataFiles() async throws {
        var template = Array("/tmp/cv-closing-XXXXXX".utf8CString)
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
        func user(_ email: String) async throws -> User {
            var fields = UserFields()
            fields.firstName = "Ada"
            fields.lastName = "Lovelace"
            fields.email = email
            return try await services.users.create(clientId: "shop", type: .natural, sca: false, fields: fields)
        }
        let closing = try await user("ada@example.com")
        let staying = try await user("grace@example.com")
        var closingCards: [String] = []
        for number in Self.numbers {
            closingCards.append(try await tokenize(services, closing.id, number, complete: true))
        }
        closingCards.append(try await tokenize(services, closing.id, Self.pendingNumber, complete: false))
        let stayingCard = try await tokenize(services, staying.id, Self.otherUsersNumber, complete: true)

        func vaultPuts(_ cardId: String) throws -> Int {
            try frames(in: root + "/data").filter {
                $0.0 == .put && $0.1 == Collections.vault && $0.2 == Identifier.scoped("shop", cardId)
            }.count
        }
        for cardId in closingCards + [stayingCard] { #expect(try vaultPuts(cardId) == 1) }

        _ = try await services.closeUser(clientId: "shop", id: closing.id, type: .natural)
        for cardId in closingCards {
            #expect(try await store.get(Collections.vault, id: Identifier.scoped("shop", cardId)) == nil)
            #expect(try await store.get(Collections.cardErasures, id: Identifier.scoped("shop", cardId)) != nil)
        }

        // Fill the active segment so that the ones holding the numbers close, then compact.
        for index in 0..<400 {
            try await store.put("filler", id: "f\(index)", value: [UInt8](repeating: UInt8(index % 251), count: 512))
        }
        for index in 0..<400 { try await store.delete("filler", id: "f\(index)") }
        try await store.put("filler", id: "last", value: [UInt8](repeating: 1, count: 70 << 10 / 2))
        try await store.put("filler", id: "last2", value: [UInt8](repeating: 2, count: 70 << 10 / 2))
        let compaction = try await store.compact()
        #expect(compaction.segmentsRemoved > 0)
        for cardId in closingCards { #expect(try vaultPuts(cardId) == 0, "vault frame of \(cardId) left") }
        #expect(try vaultPuts(stayingCard) == 1)  // the scan sees vault frames that are still live
        #expect(
            try await services.cards.vaultedNumber(clientId: "shop", cardId: stayingCard).0.alias == "497010XXXXXX1119")

        for number in Self.numbers + [Self.pendingNumber] {
            let digits = Array(number.utf8)
            let bcd = stride(from: 0, to: digits.count, by: 2).map {
                ((digits[$0] - 0x30) << 4) | (digits[$0 + 1] - 0x30)
            }
            for (name, bytes) in files(under: root + "/data") {
                #expect(!contains(bytes, digits), "card number digits in \(name)")
                #expect(!contains(bytes, bcd), "card number BCD in \(name)")
            }
        }
    }
}
