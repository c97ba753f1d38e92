import VaultCore

/// A record store in memory, for tests and for tools that need no durability. Same semantics as
/// the file store: versions, conditions, atomic batches, ordered scans.
public final class InMemoryRecordStore: RecordStore {
    private let collections = Locked<[String: [String: Record]]>([:])

    public init() {}

    /// The collections that hold at least one record.
    public var collectionNames: Set<String> {
        collections.withLock { Set($0.filter { !$0.value.isEmpty }.keys) }
    }

    public func get(_ collection: String, id: String) async throws -> Record? {
        collections.withLock { $0[collection]?[id] }
    }

    @discardableResult
    public func commit(_ writes: [RecordWrite]) async throws -> [UInt64] {
        for write in writes {
            try RecordName.validate(write.collection, what: "collection")
            try RecordName.validate(write.id, what: "record id")
        }
        return try collections.withLock { collections in
            // Check every condition against the state as the batch would see it, then apply.
            var pending: [String: [String: Record?]] = [:]
            func current(_ collection: String, _ id: String) -> Record? {
                if let staged = pending[collection]?[id] { return staged }
                return collections[collection]?[id]
            }
            var versions: [UInt64] = []
            for write in writes {
                let existing = current(write.collection, write.id)
                switch write.condition {
                case .unconditional: break
                case .absent:
                    guard existing == nil else {
                        throw StoreError(.conflict, "\(write.collection)/\(write.id) exists already")
                    }
                case .version(let expected):
                    guard existing?.version == expected else {
                        throw StoreError(.conflict, "\(write.collection)/\(write.id) changed since it was read")
                    }
                }
                switch write {
                case .put(let collection, let id, let value, _):
                    let record = Record(
                        collection: collection, id: id, version: (existing?.version ?? 0) + 1, value: value)
                    pending[collection, default: [:]][id] = .some(record)
                    versions.append(record.version)
                case .delete(let collection, let id, _):
                    pending[collection, default: [:]][id] = .some(nil)
                    versions.append(0)
                }
            }
            for (collection, records) in pending {
                for (id, record) in records {
                    collections[collection, default: [:]][id] = record
                }
            }
            return versions
        }
    }

    public func scan(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> [Record] {
        collections.withLock { collections in
            guard let records = collections[collection] else { return [] }
            let ids = records.keys.filter { id in
                id.hasPrefix(prefix) && (after.map { id > $0 } ?? true)
            }.sorted()
            return ids.prefix(max(0, limit)).map { records[$0]! }
        }
    }
}
