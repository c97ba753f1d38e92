public import VaultCore

/// A stored record: its place (collection and id), its version and its plaintext value.
///
/// Values are opaque bytes to the store (domain code encodes them); the encrypted-file store seals
/// each value with AES-256-GCM before it touches disk.
public struct Record: Sendable, Equatable {
    public var collection: String
    public var id: String
    /// Starts at 1 and grows by one on every update of the same id.
    public var version: UInt64
    public var value: [UInt8]

    public init(collection: String, id: String, version: UInt64, value: [UInt8]) {
        self.collection = collection
        self.id = id
        self.version = version
        self.value = value
    }
}

/// What must hold for a write to apply (optimistic concurrency).
public enum WriteCondition: Sendable, Equatable {
    /// Applies whatever is there.
    case unconditional
    /// Applies only if no record has this id (create).
    case absent
    /// Applies only if the record's current version is this one (update after read).
    case version(UInt64)
}

/// One write in an atomic batch.
public enum RecordWrite: Sendable, Equatable {
    case put(collection: String, id: String, value: [UInt8], condition: WriteCondition)
    case delete(collection: String, id: String, condition: WriteCondition)

    public var collection: String {
        switch self {
        case .put(let collection, _, _, _), .delete(let collection, _, _): collection
        }
    }

    public var id: String {
        switch self {
        case .put(_, let id, _, _), .delete(_, let id, _): id
        }
    }

    public var condition: WriteCondition {
        switch self {
        case .put(_, _, _, let condition), .delete(_, _, let condition): condition
        }
    }
}

/// The record store every domain service sees. Implementations: ``InMemoryRecordStore`` (tests)
/// and the encrypted append-only file store (default); a PostgreSQL one can come later.
///
/// A write returns only once it is durable. A batch is atomic: every condition is checked first,
/// and either every write applies (in one durable append) or none does.
public protocol RecordStore: Sendable {
    /// The record at `collection`/`id`, or nil.
    func get(_ collection: String, id: String) async throws -> Record?

    /// The records at `keys`, in their order (nil for an absent one). A store that can read several records in one
    /// round trip does (PostgreSQL); the default reads them one after another.
    func get(many keys: [(collection: String, id: String)]) async throws -> [Record?]

    /// Applies `writes` atomically and durably.
    /// - Returns: the new version of each write, in order (0 for a delete).
    /// - Throws: ``StoreError`` `.conflict` when a condition fails (nothing applied),
    ///   `.unavailable` when the store cannot write (disk full, I/O error).
    @discardableResult
    func commit(_ writes: [RecordWrite]) async throws -> [UInt64]

    /// ``commit(_:)``, calling `whenQueued` once the batch has its place in the store's order of writes (before
    /// it is durable), or, for a store without such an order, once it is done. A batch committed after
    /// `whenQueued` ran has its conditions checked after this one's writes: a caller that knows the new
    /// versions may hand them to the next writer of the same record, whose conditional write then follows this
    /// one in the same or the next group commit, instead of waiting for this one's sync. `whenQueued` runs
    /// exactly once, with `true` when the batch was queued (or, without an order, committed) and `false` when it
    /// was refused or failed: a caller hands its versions on only after `true`, since after a failed commit
    /// another writer (another daemon sharing the database) may hold the very version it would hand on.
    @discardableResult
    func commit(_ writes: [RecordWrite], whenQueued: @Sendable (_ queued: Bool) -> Void) async throws -> [UInt64]

    /// Records of `collection` whose id starts with `prefix`, in ascending id order, starting after
    /// `after` (exclusive), at most `limit` of them.
    func scan(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> [Record]

    /// How many records ``scan(_:prefix:after:limit:)`` would return, without reading their values.
    func count(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> Int
}

extension RecordStore {
    /// One ``get(_:id:)`` after another.
    public func get(many keys: [(collection: String, id: String)]) async throws -> [Record?] {
        var records: [Record?] = []
        records.reserveCapacity(keys.count)
        for key in keys { records.append(try await get(key.collection, id: key.id)) }
        return records
    }

    /// Without an order of queued writes: `whenQueued` runs once the commit is done (`true`) or failed (`false`).
    @discardableResult
    public func commit(
        _ writes: [RecordWrite], whenQueued: @Sendable (_ queued: Bool) -> Void
    ) async throws
        -> [UInt64]
    {
        let versions: [UInt64]
        do {
            versions = try await commit(writes)
        } catch {
            whenQueued(false)
            throw error
        }
        whenQueued(true)
        return versions
    }

    /// Counts by scanning; stores that can count from their index without opening values do so.
    public func count(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> Int {
        try await scan(collection, prefix: prefix, after: after, limit: limit).count
    }

    /// Writes one record; see ``commit(_:)``.
    @discardableResult
    public func put(
        _ collection: String, id: String, value: [UInt8], condition: WriteCondition = .unconditional
    )
        async throws -> UInt64
    {
        try await commit([.put(collection: collection, id: id, value: value, condition: condition)])[0]
    }

    /// Deletes one record; see ``commit(_:)``. Deleting an absent record with `.unconditional` is a no-op.
    public func delete(_ collection: String, id: String, condition: WriteCondition = .unconditional) async throws {
        try await commit([.delete(collection: collection, id: id, condition: condition)])
    }

    /// Every record of `collection` whose id starts with `prefix`.
    public func scanAll(_ collection: String, prefix: String = "") async throws -> [Record] {
        var all: [Record] = []
        var after: String?
        while true {
            let page = try await scan(collection, prefix: prefix, after: after, limit: 1000)
            all += page
            guard page.count == 1000, let last = page.last else { return all }
            after = last.id
        }
    }
}

/// A failure of the record store. Equal by code; messages never hold record values.
public struct StoreError: CodedError, Equatable {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        public var description: String { name }

        /// A write condition did not hold; nothing was applied.
        public static let conflict = Code(name: "conflict")
        /// The store cannot write now (disk full, I/O error); reads still work. HTTP 503.
        public static let unavailable = Code(name: "unavailable")
        /// A stored record failed authentication or its frame is damaged.
        public static let corrupted = Code(name: "corrupted")
        /// A collection or id the store cannot hold (empty, too long, bad characters).
        public static let invalidArgument = Code(name: "invalidArgument")
        /// Another process holds the store's lock.
        public static let locked = Code(name: "locked")
        /// The store was closed.
        public static let closed = Code(name: "closed")
    }

    public let code: Code
    public let message: String
    public let location: SourceLocation

    public init(_ code: Code, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.location = SourceLocation(file: file, line: line)
    }

    public static func == (lhs: StoreError, rhs: StoreError) -> Bool { lhs.code == rhs.code }
}

/// Rules for collection names and record ids, shared by every implementation.
public enum RecordName {
    /// Longest collection name or id, in UTF-8 bytes.
    public static let maximumLength = 200

    /// Throws `.invalidArgument` unless `name` is 1...200 bytes of printable ASCII without `/`.
    public static func validate(_ name: String, what: String) throws {
        var name = name
        let valid = name.withUTF8 { bytes in
            !bytes.isEmpty && bytes.count <= maximumLength && isPrintableWithoutSlash(UnsafeRawBufferPointer(bytes))
        }
        guard valid else {
            throw StoreError(
                .invalidArgument, "\(what) must be 1-\(maximumLength) printable ASCII characters without '/'")
        }
    }

    /// Whether every byte is printable ASCII (0x21 to 0x7E) other than `/`: eight bytes at a time (every collection
    /// and id of every write and read passes here), then byte by byte.
    static func isPrintableWithoutSlash(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        while index + 8 <= bytes.count {
            if !isPrintableWithoutSlash(word: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)) {
                return false
            }
            index += 8
        }
        while index < bytes.count {
            let byte = bytes[index]
            guard byte > 0x20, byte < 0x7F, byte != 0x2F else { return false }
            index += 1
        }
        return true
    }

    /// The eight-byte test, exact for the word as a whole: no byte below 0x21 (`(w - 0x21…) & ~w`), none at 0x7F or
    /// above (`(w + 0x01…) | w`, the high bit after adding one), and none equal to `/` (a zero byte after an XOR).
    @inline(__always)
    static func isPrintableWithoutSlash(word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        let below = (word &- ones &* 0x21) & ~word
        let above = (word &+ ones) | word
        let slash = word ^ (ones &* 0x2F)
        let slashes = (slash &- ones) & ~slash
        return (below | above | slashes) & highBits == 0
    }
}
