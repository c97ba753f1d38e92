import Testing
import VaultStore

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
