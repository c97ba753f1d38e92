import Foundation
import Testing
import VaultStore
import VaultStorePostgres

/// The behaviour every ``RecordStore`` must show. Each implementation runs these cases through
/// its own factory in `stores`.
@Suite struct RecordStoreContractTests {
    /// Factories of the stores under test; the encrypted file store adds itself here.
    static let stores: [StoreFactory] = [
        StoreFactory(name: "in-memory") { InMemoryRecordStore() },
        StoreFactory(name: "encrypted-file") {
            // Each case gets its own directory; the sandbox outlives the store (closed at exit).
            let sandbox = try StoreSandbox()
            return SandboxedStore(sandbox: sandbox, store: try sandbox.open(testOptions()))
        },
        StoreFactory(name: "postgresql") {
            // The sandbox (schema and master key) stays alive with the store.
            let sandbox = try PostgresSandbox()
            return SandboxedPostgresStore(sandbox: sandbox)
        },
    ]

    @Test(arguments: stores)
    func putThenGetReturnsTheValueAtVersionOne(_ factory: StoreFactory) async throws {
        let store = try await factory.make()
        let version = try await store.put("cards", id: "c1", value: [1, 2, 3], condition: .absent)
        #expect(version == 1)
        #expect(
            try await store.get("cards", id: "c1")
                == Record(collection: "cards", id: "c1", version: 1, value: [1, 2, 3]))
        #expect(try await store.get("cards", id: "c2") == nil)
        #expect(try await store.get("users", id: "c1") == nil)
    }

    @Test(arguments: stores)
    func manyReadsAnswerEachKeyInOrder(_ factory: StoreFactory) async throws {
        let store = try await factory.make()
        try await store.put("cards", id: "c1", value: [1], condition: .absent)
        try await store.put("cards", id: "c1", value: [2], condition: .version(1))
        try await store.put("users", id: "u1", value: [3], condition: .absent)
        let found = try await store.get(many: [
            ("users", "u1"), ("cards", "c2"), ("cards", "c1"), ("users", "c1"), ("cards", "c1"),
        ])
        #expect(
            found == [
                Record(collection: "users", id: "u1", version: 1, value: [3]), nil,
                Record(collection: "cards", id: "c1", version: 2, value: [2]), nil,
                Record(collection: "cards", id: "c1", version: 2, value: [2]),
            ])
        #expect(try await store.get(many: []) == [])
        #expect(try await store.get(many: [("users", "u1")]) == [found[0]])
    }

    @Test(arguments: stores)
    func conditionsAreEnforced(_ factory: StoreFactory) async throws {
        let store = try await factory.make()
        try await store.put("cards", id: "c1", value: [1], condition: .absent)
        await #expect(throws: StoreError(.conflict, "")) {
            try await store.put("cards", id: "c1", value: [2], condition: .absent)
        }
        #expect(try await store.put("cards", id: "c1", value: [2], condition: .version(1)) == 2)
        await #expect(throws: StoreError(.conflict, "")) {
            try await store.put("cards", id: "c1", value: [3], condition: .version(1))
        }
        #expect(try await store.get("cards", id: "c1")?.value == [2])
        #expect(try await store.put("cards", id: "c1", value: [4]) == 3)
    }

    @Test(arguments: stores)
    func batchesAreAllOrNothing(_ factory: StoreFactory) async throws {
        let store = try await factory.make()
        try await store.put("wallets", id: "w1", value: [10])
        await #expect(throws: StoreError(.conflict, "")) {
            try await store.commit([
                .put(collection: "payins", id: "p1", value: [1], condition: .absent),
                .put(collection: "wallets", id: "w1", value: [20], condition: .version(7)),
            ])
        }
        #expect(try await store.get("payins", id: "p1") == nil)
        #expect(try await store.get("wallets", id: "w1")?.value == [10])
        let versions = try await store.commit([
            .put(collection: "payins", id: "p1", value: [1], condition: .absent),
            .put(collection: "wallets", id: "w1", value: [20], condition: .version(1)),
        ])
        #expect(versions == [1, 2])
    }

    @Test(arguments: stores)
    func deleteRemovesAndRespectsConditions(_ factory: StoreFactory) async throws {
        let store = try await factory.make()
        try await store.put("cards", id: "c1", value: [1])
        await #expect(throws: StoreError(.conflict, "")) {
            try await store.delete("cards", id: "c1", condition: .version(9))
        }
        try await store.delete("cards", id: "c1", condition: .version(1))
        #expect(try await store.get("cards", id: "c1") == nil)
        try await store.delete("cards", id: "never-was")
        #expect(try await store.put("cards", id: "c1", value: [5], condition: .absent) == 1)
    }

    @Test(arguments: stores)
    func scanPagesInIdOrderWithPrefix(_ factory: StoreFactory) async throws {
        let store = try await factory.make()
        for index in [3, 1, 2, 10] {
            try await store.put("cards", id: "u1-\(index)", value: [UInt8(index)])
        }
        try await store.put("cards", id: "u2-1", value: [9])
        try await store.put("users", id: "u1-9", value: [9])
        let first = try await store.scan("cards", prefix: "u1-", after: nil, limit: 2)
        #expect(first.map(\.id) == ["u1-1", "u1-10"])
        let rest = try await store.scan("cards", prefix: "u1-", after: "u1-10", limit: 10)
        #expect(rest.map(\.id) == ["u1-2", "u1-3"])
        #expect(try await store.scanAll("cards").count == 5)
        #expect(try await store.count("cards", prefix: "u1-", after: nil, limit: 100) == 4)
        #expect(try await store.count("cards", prefix: "u1-", after: "u1-10", limit: 100) == 2)
        #expect(try await store.count("cards", prefix: "u1-", after: nil, limit: 3) == 3)
        #expect(try await store.count("users", prefix: "u2", after: nil, limit: 100) == 0)
        try await store.delete("cards", id: "u1-3")
        #expect(try await store.count("cards", prefix: "u1-", after: nil, limit: 100) == 3)
    }

    @Test(arguments: stores)
    func invalidNamesAreRefused(_ factory: StoreFactory) async throws {
        let store = try await factory.make()
        for (collection, id) in [
            ("", "x"), ("cards", ""), ("cards", "a/b"), ("cards", String(repeating: "x", count: 201)),
        ] {
            await #expect(throws: StoreError(.invalidArgument, "")) {
                try await store.put(collection, id: id, value: [1])
            }
        }
    }

    @Test(arguments: stores)
    func unconditionalPutsCountVersionsAndDeletesStartOver(_ factory: StoreFactory) async throws {
        let store = try await factory.make()
        #expect(try await store.put("cards", id: "c1", value: [1]) == 1)
        #expect(try await store.put("cards", id: "c1", value: [2]) == 2)
        #expect(try await store.put("cards", id: "c1", value: []) == 3)
        #expect(try await store.get("cards", id: "c1") == Record(collection: "cards", id: "c1", version: 3, value: []))
        try await store.delete("cards", id: "c1")
        #expect(try await store.get("cards", id: "c1") == nil)
        #expect(try await store.put("cards", id: "c1", value: [7]) == 1)
        await #expect(throws: StoreError(.conflict, "")) {
            try await store.delete("cards", id: "c1", condition: .absent)
        }
        try await store.delete("never", id: "x", condition: .absent)
    }

    @Test(arguments: stores)
    func laterWritesOfABatchSeeTheEarlierOnes(_ factory: StoreFactory) async throws {
        let store = try await factory.make()
        try await store.put("a", id: "x", value: [1])
        let versions = try await store.commit([
            .put(collection: "a", id: "x", value: [2], condition: .version(1)),
            .put(collection: "a", id: "x", value: [3], condition: .version(2)),
            .delete(collection: "a", id: "y", condition: .absent),
            .put(collection: "a", id: "y", value: [4], condition: .absent),
            .put(collection: "a", id: "y", value: [5], condition: .unconditional),
        ])
        #expect(versions == [2, 3, 0, 1, 2])
        #expect(try await store.get("a", id: "x")?.value == [3])
        #expect(try await store.get("a", id: "y") == Record(collection: "a", id: "y", version: 2, value: [5]))
        // A batch that contradicts itself applies nothing.
        await #expect(throws: StoreError(.conflict, "")) {
            try await store.commit([
                .put(collection: "a", id: "z", value: [1], condition: .absent),
                .put(collection: "a", id: "z", value: [2], condition: .absent),
            ])
        }
        #expect(try await store.get("a", id: "z") == nil)
        let emptied = try await store.commit([
            .delete(collection: "a", id: "x", condition: .version(3)),
            .put(collection: "a", id: "x", value: [9], condition: .absent),
        ])
        #expect(emptied == [0, 1])
    }

    @Test(arguments: stores)
    func concurrentCompareAndSetIncrementsLoseNoUpdate(_ factory: StoreFactory) async throws {
        let store = try await factory.make()
        try await store.put("counters", id: "n", value: Array("0".utf8), condition: .absent)
        let workers = 8
        let increments = 12
        let conflicts = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<workers {
                group.addTask {
                    var conflicts = 0
                    var done = 0
                    while done < increments {
                        let record = try await store.get("counters", id: "n")!
                        let next = Int(String(decoding: record.value, as: UTF8.self))! + 1
                        do {
                            try await store.put(
                                "counters", id: "n", value: Array(String(next).utf8),
                                condition: .version(record.version))
                            done += 1
                        } catch let error as StoreError where error.code == .conflict {
                            conflicts += 1
                        }
                    }
                    return conflicts
                }
            }
            return try await group.reduce(0, +)
        }
        let final = try await store.get("counters", id: "n")!
        #expect(String(decoding: final.value, as: UTF8.self) == String(workers * increments))
        #expect(final.version == UInt64(workers * increments + 1))
        _ = conflicts
    }

    @Test(arguments: stores)
    func concurrentCreatesOfOneIdHaveExactlyOneWinner(_ factory: StoreFactory) async throws {
        let store = try await factory.make()
        let winners = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<16 {
                group.addTask {
                    do {
                        try await store.commit([
                            .put(collection: "payins", id: "p1", value: [UInt8(index)], condition: .absent),
                            .put(collection: "credits", id: "p1-\(index)", value: [1], condition: .absent),
                        ])
                        return 1
                    } catch let error as StoreError where error.code == .conflict {
                        return 0
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(winners == 1)
        // The loser's second write never applied either.
        #expect(try await store.scanAll("credits").count == 1)
    }

    @Test(arguments: stores)
    func everyAcknowledgedConcurrentWriteIsReadBack(_ factory: StoreFactory) async throws {
        let store = try await factory.make()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<16 {
                group.addTask {
                    for index in 0..<20 {
                        try await store.put(
                            "cards", id: "w\(writer)-\(index)",
                            value: Array(repeating: UInt8(index), count: 100 + writer))
                    }
                }
            }
            try await group.waitForAll()
        }
        let all = try await store.scanAll("cards")
        #expect(all.count == 320)
        for record in all {
            let parts = record.id.dropFirst().split(separator: "-").compactMap { Int($0) }
            #expect(record.value == Array(repeating: UInt8(parts[1]), count: 100 + parts[0]))
        }
    }

    @Test(arguments: stores)
    func largeAndBinaryValuesRoundTrip(_ factory: StoreFactory) async throws {
        let store = try await factory.make()
        let large = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try await store.put("blobs", id: "big", value: large)
        let binary: [UInt8] = [0, 0, 255, 0, 39, 92, 0]
        try await store.put("blobs", id: "nul", value: binary)
        #expect(try await store.get("blobs", id: "big")?.value == large)
        #expect(try await store.get("blobs", id: "nul")?.value == binary)
        let tricky = "a'b\\c%_~!"
        try await store.put("blobs", id: tricky, value: [1])
        #expect(try await store.get("blobs", id: tricky)?.value == [1])
        #expect(try await store.scan("blobs", prefix: "a'", after: nil, limit: 10).map(\.id) == [tricky])
        #expect(try await store.scan("blobs", prefix: "a%", after: nil, limit: 10).isEmpty)
        #expect(try await store.scan("blobs", prefix: "", after: "~", limit: 10).isEmpty)
        #expect(try await store.scan("blobs", prefix: "", after: nil, limit: 0).isEmpty)
    }
}

/// Makes a fresh, empty store for one test case.
struct StoreFactory: Sendable, CustomTestStringConvertible {
    var name: String
    var make: @Sendable () async throws -> any RecordStore
    var testDescription: String { name }
}

/// A file store with the sandbox that holds its directory, kept alive together.
final class SandboxedStore: RecordStore {
    let sandbox: StoreSandbox
    let store: EncryptedFileStore

    init(sandbox: StoreSandbox, store: EncryptedFileStore) {
        self.sandbox = sandbox
        self.store = store
    }

    deinit { store.close() }

    func get(_ collection: String, id: String) async throws -> Record? { try await store.get(collection, id: id) }
    func commit(_ writes: [RecordWrite]) async throws -> [UInt64] { try await store.commit(writes) }
    func scan(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> [Record] {
        try await store.scan(collection, prefix: prefix, after: after, limit: limit)
    }
}

/// A PostgreSQL store kept alive with its sandbox.
final class SandboxedPostgresStore: RecordStore {
    let sandbox: PostgresSandbox
    init(sandbox: PostgresSandbox) { self.sandbox = sandbox }
    func get(_ collection: String, id: String) async throws -> Record? {
        try await sandbox.store.get(collection, id: id)
    }
    func get(many keys: [(collection: String, id: String)]) async throws -> [Record?] {
        try await sandbox.store.store.get(many: keys)
    }
    func commit(_ writes: [RecordWrite]) async throws -> [UInt64] { try await sandbox.store.commit(writes) }
    func scan(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> [Record] {
        try await sandbox.store.scan(collection, prefix: prefix, after: after, limit: limit)
    }
    func count(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> Int {
        try await sandbox.store.count(collection, prefix: prefix, after: after, limit: limit)
    }
}
