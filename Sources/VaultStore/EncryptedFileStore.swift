import Dispatch
import Foundation
import Synchronization
import VaultCore
import VaultCrypto

/// Settings of an ``EncryptedFileStore``. Defaults suit a daemon; tests shrink the sizes.
public struct FileStoreOptions: Sendable {
    /// A segment file is closed to appends once it reaches this size.
    public var segmentBytes: Int
    /// A new index checkpoint is written after this many bytes of log.
    public var checkpointBytes: Int
    /// Compaction starts on its own once this share of the log is superseded or deleted records.
    public var compactionGarbageRatio: Double
    /// ... and the log is at least this big.
    public var compactionMinimumBytes: Int
    /// Whether compaction runs on its own (otherwise only through ``EncryptedFileStore/compact()``).
    public var automaticCompaction: Bool
    /// After a failed write, writes are refused for this long before one is tried again.
    public var writeRetryInterval: TimeInterval
    /// The file layer (tests inject failures through it).
    public var fileSystem: any StorageFileSystem
    public var clock: any WallClock
    public var logger: Logger

    public init(
        segmentBytes: Int = 64 << 20,
        checkpointBytes: Int = 64 << 20,
        compactionGarbageRatio: Double = 0.5,
        compactionMinimumBytes: Int = 256 << 20,
        automaticCompaction: Bool = true,
        writeRetryInterval: TimeInterval = 1,
        fileSystem: any StorageFileSystem = SystemFileSystem(),
        clock: any WallClock = SystemClock(),
        logger: Logger = .disabled
    ) {
        self.segmentBytes = segmentBytes
        self.checkpointBytes = checkpointBytes
        self.compactionGarbageRatio = compactionGarbageRatio
        self.compactionMinimumBytes = compactionMinimumBytes
        self.automaticCompaction = automaticCompaction
        self.writeRetryInterval = writeRetryInterval
        self.fileSystem = fileSystem
        self.clock = clock
        self.logger = logger
    }
}

/// What start-up recovery found.
public struct RecoveryReport: Sendable, Equatable {
    /// Whether an index checkpoint was loaded (otherwise every segment was replayed).
    public var usedCheckpoint: Bool
    /// Frames replayed from the log after the checkpoint.
    public var framesReplayed: Int
    /// Bytes cut off the end of the log as an unfinished (never acknowledged) write.
    public var tornTailBytes: Int
    /// Damaged places found in the middle of the log: "segment N offset O (L bytes)".
    public var damage: [String]
    /// Records whose frame is damaged (reads of them fail with `.corrupted`).
    public var corruptedRecords: Int
    /// Records in the index after recovery.
    public var records: Int
}

/// A record that failed ``EncryptedFileStore/verify(progress:)``.
public struct VerifyFailure: Sendable, Equatable, CustomStringConvertible {
    public var collection: String
    public var id: String
    public var reason: String
    public var description: String { "\(collection)/\(id): \(reason)" }
}

/// The result of reading back every record.
public struct VerifyReport: Sendable, Equatable {
    public var checked: Int
    public var failures: [VerifyFailure]
    /// Damage in the log that holds no identifiable record (from recovery).
    public var damage: [String]
}

/// A data key version with the number of live records sealed under it.
public struct DataKeyStatus: Sendable, Equatable {
    public var key: DataKeyInfo
    public var records: Int
    public var isCurrent: Bool
}

/// Sizes, for metrics and the benchmark suite.
public struct StoreStatistics: Sendable, Equatable {
    public var records: Int
    public var segments: Int
    public var logBytes: Int
    public var liveBytes: Int
    /// Approximate heap bytes held by the in-memory index.
    public var indexMemoryBytes: Int
    public var isWritable: Bool
    /// Appends with one fsync each since opening, and the commits they carried (their ratio is
    /// the average group-commit batch).
    public var commitGroups: Int
    public var commits: Int
}

/// The default record store: encrypted, append-only segment files in a data directory.
///
/// Layout of the data directory (0700, every file 0600): `LOCK` (held by the owning process),
/// `keyring.json` (data keys wrapped by the master key), `segments/NNNNNNNN.seg` (the log of
/// ``RecordFrame``s), `index.checkpoint` (see ``IndexCheckpoint``) and, while the daemon runs,
/// `admin.sock`.
///
/// Writers seal their values in parallel, then hand their frames to one flusher thread that
/// appends everything waiting in one `write` and one `fdatasync` (group commit) before any of
/// them is acknowledged. Reads look the record up in the in-memory index and `pread` its frame.
/// Call ``close()`` when done: it writes a checkpoint and releases the lock.
public final class EncryptedFileStore: RecordStore, Sendable {
    public let directory: String
    public let keyRing: KeyRing
    /// What recovery found when the store was opened.
    public let recovery: RecoveryReport
    let options: FileStoreOptions
    let fileSystem: any StorageFileSystem
    let segmentsDirectory: String
    private let lock: DataDirectoryLock
    let state: Mutex<State>
    private let wake = DispatchSemaphore(value: 0)
    private let flusherDone = DispatchSemaphore(value: 0)
    /// Serialises checkpoints and segment removal.
    let maintenance = Mutex<Void>(())
    let compacting = Mutex<Bool>(false)

    static let segmentHeaderSize = 16
    private static let segmentMagic = Array("CVSEG001".utf8)

    /// One segment file.
    final class Segment: Sendable {
        let number: UInt32
        let file: any StorageFile
        init(number: UInt32, file: any StorageFile) {
            self.number = number
            self.file = file
        }
    }

    struct RecordKey: Hashable {
        var collection: String
        var id: String
    }

    enum Outcome: Sendable {
        case committed
        case retry
    }

    /// One record write waiting in a group, its offset relative to the group's start.
    struct StagedWrite {
        enum Kind {
            case put
            case delete
            /// Moves the current frame of a record (compaction, rewrap) without changing it.
            case relocate
        }
        var kind: Kind
        var key: RecordKey
        var offset: Int
        var length: Int
        var keyVersion: UInt32
        var version: UInt64
    }

    struct Group {
        var number: UInt64
        var bytes: [UInt8] = []
        var writes: [StagedWrite] = []
        var waiters: [CheckedContinuation<Outcome, any Error>] = []
        var isEmpty: Bool { writes.isEmpty && waiters.isEmpty }
    }

    struct Pending {
        /// 0 when the pending write is a delete.
        var version: UInt64
        var group: UInt64
    }

    struct State {
        var index: RecordIndex
        var pending: [RecordKey: Pending] = [:]
        var staging: Group
        var segments: [UInt32: Segment]
        var segmentSizes: [UInt32: Int]
        var active: Segment
        var activeSize: UInt64
        var durable: IndexCheckpoint.Position
        var failedAt: Date?
        var failureText = ""
        var closing = false
        var closed = false
        var flusherIdle = true
        var bytesSinceCheckpoint = 0
        var changedSinceCheckpoint = false
        var checkpointScheduled = false
        /// Staged or in-flight writes per data key version (not yet in the index).
        var inFlightKeyVersions: [UInt32: Int] = [:]
        var recoveryDamage: [String]
        var commitGroups = 0
        var committedWaiters = 0
    }

    // MARK: Opening

    /// Opens (creating if needed) the store in `directory`, with the master key in `keysDirectory`.
    /// Takes the directory's lock, opens the keyring, loads the index checkpoint and replays the
    /// log after it, cutting off a torn tail.
    /// - Throws: ``StoreError`` `.locked` if another process holds the directory, ``KeyRingError``
    ///   for key problems, ``StoreError`` `.unavailable` for file errors.
    public static func open(
        directory: String, keysDirectory: String, options: FileStoreOptions = FileStoreOptions()
    ) throws -> EncryptedFileStore {
        let fileSystem = options.fileSystem
        try fileSystem.makeDirectory(directory)
        let lock = try DataDirectoryLock(directory: directory)
        do {
            let keyRing = try KeyRing.open(dataDirectory: directory, keysDirectory: keysDirectory, clock: options.clock)
            return try EncryptedFileStore(directory: directory, keyRing: keyRing, lock: lock, options: options)
        } catch {
            lock.release()
            throw error
        }
    }

    private init(directory: String, keyRing: KeyRing, lock: DataDirectoryLock, options: FileStoreOptions) throws {
        self.directory = directory
        self.keyRing = keyRing
        self.lock = lock
        self.options = options
        self.fileSystem = options.fileSystem
        self.segmentsDirectory = (directory as NSString).appendingPathComponent("segments")
        try fileSystem.makeDirectory(segmentsDirectory)
        let (state, report) = try Self.recover(
            directory: directory, segmentsDirectory: segmentsDirectory, fileSystem: fileSystem, logger: options.logger)
        self.state = Mutex(state)
        self.recovery = report
        options.logger.info(
            "record store opened",
            [
                "records": .int(report.records), "checkpoint": .bool(report.usedCheckpoint),
                "replayed": .int(report.framesReplayed), "tornTailBytes": .int(report.tornTailBytes),
                "damaged": .int(report.damage.count + report.corruptedRecords),
            ])
        let thread = Thread { [self] in self.flushLoop() }
        thread.name = "cardvault-store-flusher"
        thread.start()
    }

    static func segmentName(_ number: UInt32) -> String {
        let digits = String(number)
        return String(repeating: "0", count: max(0, 8 - digits.count)) + digits + ".seg"
    }

    func segmentPath(_ number: UInt32) -> String {
        (segmentsDirectory as NSString).appendingPathComponent(Self.segmentName(number))
    }

    private static func recover(
        directory: String, segmentsDirectory: String, fileSystem: any StorageFileSystem, logger: Logger
    ) throws -> (State, RecoveryReport) {
        func path(_ number: UInt32) -> String {
            (segmentsDirectory as NSString).appendingPathComponent(segmentName(number))
        }
        let numbers = try fileSystem.contentsOfDirectory(segmentsDirectory).compactMap { name -> UInt32? in
            guard name.hasSuffix(".seg") else { return nil }
            return UInt32(name.dropLast(4))
        }.sorted()
        var index = RecordIndex()
        var start = IndexCheckpoint.Position(segment: 0, offset: 0)
        var usedCheckpoint = false
        let checkpointPath = (directory as NSString).appendingPathComponent(IndexCheckpoint.fileName)
        if let file = try? fileSystem.openFile(checkpointPath, create: false) {
            let bytes = try file.read(count: Int(try file.size()), at: 0)
            if let (loaded, position) = IndexCheckpoint.decode(bytes), numbers.contains(position.segment) {
                index = loaded
                start = position
                usedCheckpoint = true
            } else {
                logger.warning("index checkpoint unusable; replaying the whole log")
            }
        }
        var segments: [UInt32: Segment] = [:]
        var sizes: [UInt32: Int] = [:]
        var replayed = 0
        var torn = 0
        var damage: [String] = []
        var activeSize: UInt64 = UInt64(segmentHeaderSize)
        for (position, number) in numbers.enumerated() {
            let file = try fileSystem.openFile(path(number), create: false)
            let segment = Segment(number: number, file: file)
            segments[number] = segment
            let size = Int(try file.size())
            sizes[number] = size
            let isLast = position == numbers.count - 1
            if number < start.segment && usedCheckpoint {
                continue
            }
            let bytes = try file.read(count: size, at: 0)
            guard bytes.count >= segmentHeaderSize, Array(bytes[0..<8]) == segmentMagic else {
                if isLast && bytes.count < segmentHeaderSize {
                    // A crash while the segment was being created: finish its header.
                    try writeSegmentHeader(file, number: number)
                    sizes[number] = segmentHeaderSize
                    activeSize = UInt64(segmentHeaderSize)
                    continue
                }
                damage.append("segment \(number): bad header")
                continue
            }
            let from = (usedCheckpoint && number == start.segment) ? Int(start.offset) : segmentHeaderSize
            let result = bytes.withUnsafeBytes { raw in
                SegmentScanner.scan(raw, from: from) { batch in
                    for frame in batch {
                        replayed += 1
                        switch frame.header.kind {
                        case .put:
                            index.upsert(
                                frame.collection, frame.id,
                                RecordLocation(
                                    segment: number, offset: UInt32(frame.offset), length: UInt32(frame.header.length),
                                    keyVersion: frame.header.keyVersion, version: frame.header.recordVersion),
                                corrupted: frame.damaged)
                        case .delete:
                            index.remove(frame.collection, frame.id)
                        }
                    }
                }
            }
            for range in result.damagedRanges {
                damage.append("segment \(number) offset \(range.lowerBound) (\(range.count) bytes)")
            }
            if result.tornBytes > 0 {
                if isLast {
                    torn += result.tornBytes
                    try file.truncate(to: UInt64(result.end))
                    try file.sync()
                    sizes[number] = result.end
                } else {
                    damage.append("segment \(number) offset \(result.end) (\(result.tornBytes) bytes, unfinished)")
                }
            }
            if isLast { activeSize = UInt64(sizes[number]!) }
        }
        let active: Segment
        if let last = numbers.last, let segment = segments[last] {
            active = segment
        } else {
            let file = try fileSystem.openFile(path(1), create: true)
            try writeSegmentHeader(file, number: 1)
            try fileSystem.syncDirectory(segmentsDirectory)
            active = Segment(number: 1, file: file)
            segments[1] = active
            sizes[1] = segmentHeaderSize
            activeSize = UInt64(segmentHeaderSize)
        }
        let report = RecoveryReport(
            usedCheckpoint: usedCheckpoint, framesReplayed: replayed, tornTailBytes: torn, damage: damage,
            corruptedRecords: index.corruptedCount, records: index.count)
        let state = State(
            index: index, staging: Group(number: 1), segments: segments, segmentSizes: sizes, active: active,
            activeSize: activeSize, durable: IndexCheckpoint.Position(segment: active.number, offset: activeSize),
            changedSinceCheckpoint: replayed > 0 || !usedCheckpoint, recoveryDamage: damage)
        return (state, report)
    }

    static func writeSegmentHeader(_ file: any StorageFile, number: UInt32) throws {
        var header = segmentMagic
        RecordFrame.appendInteger(&header, number)
        RecordFrame.appendInteger(&header, UInt32(0))
        try file.truncate(to: 0)
        try header.withUnsafeBytes { try file.write($0, at: 0) }
        try file.sync()
    }

    // MARK: RecordStore

    public func get(_ collection: String, id: String) async throws -> Record? {
        try read(collection, id: id)
    }

    /// Reads one record synchronously (see ``get(_:id:)``).
    public func read(_ collection: String, id: String) throws -> Record? {
        let found = try state.withLock { state -> (RecordLocation, Bool, Segment?)? in
            guard !state.closed else { throw StoreError(.closed, "the store is closed") }
            guard let entry = state.index.find(collection, id) else { return nil }
            let item = state.index[entry]
            return (item.location, item.flags & RecordIndex.corrupted != 0, state.segments[item.location.segment])
        }
        guard let (location, corrupted, segment) = found else { return nil }
        guard !corrupted, let segment else {
            throw StoreError(.corrupted, "record \(collection)/\(id) is damaged on disk")
        }
        let value = try open(collection, id, location, in: segment)
        return Record(collection: collection, id: id, version: location.version, value: value)
    }

    /// Reads and authenticates the frame at `location`, returning the plaintext value.
    func open(_ collection: String, _ id: String, _ location: RecordLocation, in segment: Segment) throws -> [UInt8] {
        let frame: [UInt8]
        do {
            frame = try segment.file.read(count: Int(location.length), at: UInt64(location.offset))
        } catch {
            throw StoreError(.unavailable, "cannot read record \(collection)/\(id): \(error)")
        }
        guard frame.count == Int(location.length) else {
            throw StoreError(.corrupted, "record \(collection)/\(id) is cut short on disk")
        }
        guard let key = keyRing.key(version: location.keyVersion) else {
            throw StoreError(
                .corrupted, "record \(collection)/\(id) is sealed under data key version \(location.keyVersion), which is retired")
        }
        return try frame.withUnsafeBytes { raw in
            let namesEnd = RecordFrame.fixedHeaderSize + collection.utf8.count + id.utf8.count
            guard namesEnd + AESGCM.overhead + RecordFrame.trailerSize <= raw.count else {
                throw StoreError(.corrupted, "record \(collection)/\(id) failed authentication")
            }
            let sealed = UnsafeRawBufferPointer(rebasing: raw[namesEnd..<raw.count - RecordFrame.trailerSize])
            let aad = withBytes(collection) { collectionBytes in
                withBytes(id) { idBytes in
                    RecordFrame.authenticatedData(
                        kind: .put, collection: collectionBytes, id: idBytes, keyVersion: location.keyVersion,
                        recordVersion: location.version)
                }
            }
            do {
                let plain = try AESGCM.open(sealed, using: key, authenticating: aad)
                return plain.withUnsafeBytes { Array($0) }
            } catch {
                throw StoreError(.corrupted, "record \(collection)/\(id) failed authentication")
            }
        }
    }

    public func scan(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> [Record] {
        let found = try state.withLock { state -> [(String, RecordLocation, Bool, Segment?)] in
            guard !state.closed else { throw StoreError(.closed, "the store is closed") }
            return state.index.scan(collection, prefix: prefix, after: after, limit: limit).map { entry in
                let item = state.index[entry]
                return (
                    state.index.id(of: entry), item.location, item.flags & RecordIndex.corrupted != 0,
                    state.segments[item.location.segment]
                )
            }
        }
        return try found.map { id, location, corrupted, segment in
            guard !corrupted, let segment else {
                throw StoreError(.corrupted, "record \(collection)/\(id) is damaged on disk")
            }
            return Record(
                collection: collection, id: id, version: location.version,
                value: try open(collection, id, location, in: segment))
        }
    }

    /// Counts from the in-memory index: no value is read or decrypted.
    public func count(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> Int {
        try state.withLock { state in
            guard !state.closed else { throw StoreError(.closed, "the store is closed") }
            return state.index.scan(collection, prefix: prefix, after: after, limit: limit).count
        }
    }

    @discardableResult
    public func commit(_ writes: [RecordWrite]) async throws -> [UInt64] {
        guard !writes.isEmpty else { return [] }
        for write in writes {
            try RecordName.validate(write.collection, what: "collection")
            try RecordName.validate(write.id, what: "record id")
            if case .put(_, _, let value, _) = write, value.count > RecordFrame.maximumValueSize {
                throw StoreError(.invalidArgument, "a record value may hold at most \(RecordFrame.maximumValueSize) bytes")
            }
        }
        while true {
            let (versions, keyVersion, key) = try state.withLock { state in
                try checkWritable(state)
                let versions = try Self.resolve(writes, state)
                let current = keyRing.currentKey()
                return (versions, current.version, current.key)
            }
            // Seal outside the lock, so writers use both cores.
            var bytes: [UInt8] = []
            bytes.reserveCapacity(writes.reduce(0) { $0 + $1.collection.utf8.count + $1.id.utf8.count + 80 })
            var staged: [StagedWrite] = []
            staged.reserveCapacity(writes.count)
            let last = versions.lastIndex { $0 != nil }
            for (position, write) in writes.enumerated() {
                guard let version = versions[position] else { continue }  // deleting an absent record
                let flags = position == last ? RecordFrame.endOfBatch : 0
                let start = bytes.count
                let kind: StagedWrite.Kind
                switch write {
                case .put(let collection, let id, let value, _):
                    kind = .put
                    try withBytes(collection) { collectionBytes in
                        try withBytes(id) { idBytes in
                            let aad = RecordFrame.authenticatedData(
                                kind: .put, collection: collectionBytes, id: idBytes, keyVersion: keyVersion,
                                recordVersion: version)
                            let sealed = try AESGCM.seal(value, using: key, authenticating: aad)
                            sealed.withUnsafeBytes { sealedBytes in
                                RecordFrame.append(
                                    to: &bytes, kind: .put, flags: flags, collection: collectionBytes, id: idBytes,
                                    keyVersion: keyVersion, recordVersion: version, sealed: sealedBytes)
                            }
                        }
                    }
                case .delete(let collection, let id, _):
                    kind = .delete
                    withBytes(collection) { collectionBytes in
                        withBytes(id) { idBytes in
                            RecordFrame.append(
                                to: &bytes, kind: .delete, flags: flags, collection: collectionBytes, id: idBytes,
                                keyVersion: 0, recordVersion: version, sealed: UnsafeRawBufferPointer(start: nil, count: 0))
                        }
                    }
                }
                staged.append(
                    StagedWrite(
                        kind: kind, key: RecordKey(collection: write.collection, id: write.id), offset: start,
                        length: bytes.count - start, keyVersion: kind == .put ? keyVersion : 0, version: version))
            }
            if staged.isEmpty { return versions.map { _ in 0 } }
            let outcome = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Outcome, any Error>) in
                let result: Result<Bool, any Error> = state.withLock { state in
                    do {
                        try checkWritable(state)
                        guard keyRing.currentVersion == keyVersion, try Self.resolve(writes, state) == versions else {
                            return .success(false)
                        }
                    } catch {
                        return .failure(error)
                    }
                    stage(&state, bytes: bytes, writes: staged, waiter: continuation)
                    return .success(true)
                }
                switch result {
                case .success(true): signalFlusher()
                case .success(false): continuation.resume(returning: .retry)
                case .failure(let error): continuation.resume(throwing: error)
                }
            }
            if case .committed = outcome {
                return zip(writes, versions).map { write, version in
                    if case .delete = write { return 0 }
                    return version ?? 0
                }
            }
        }
    }

    /// Checks every condition against the durable index and the writes not yet durable.
    /// - Returns: per write, the version it writes (a delete: the version it removes), or nil for
    ///   the delete of an absent record, which writes nothing.
    static func resolve(_ writes: [RecordWrite], _ state: State) throws -> [UInt64?] {
        var local: [RecordKey: UInt64] = [:]
        var result: [UInt64?] = []
        result.reserveCapacity(writes.count)
        for write in writes {
            let key = RecordKey(collection: write.collection, id: write.id)
            let current: UInt64
            if writes.count > 1, let staged = local[key] {
                current = staged
            } else if let pending = state.pending[key] {
                current = pending.version
            } else if let entry = state.index.find(write.collection, write.id) {
                current = state.index[entry].location.version
            } else {
                current = 0
            }
            switch write.condition {
            case .unconditional: break
            case .absent:
                guard current == 0 else { throw StoreError(.conflict, "\(write.collection)/\(write.id) exists already") }
            case .version(let expected):
                guard current == expected, expected > 0 else {
                    throw StoreError(.conflict, "\(write.collection)/\(write.id) changed since it was read")
                }
            }
            switch write {
            case .put:
                result.append(current + 1)
                if writes.count > 1 { local[key] = current + 1 }
            case .delete:
                result.append(current == 0 ? nil : current)
                if writes.count > 1 { local[key] = 0 }
            }
        }
        return result
    }

    private func checkWritable(_ state: State) throws {
        guard !state.closing else { throw StoreError(.closed, "the store is closed") }
        if let failedAt = state.failedAt, options.clock.now.timeIntervalSince(failedAt) < options.writeRetryInterval {
            throw StoreError(.unavailable, "the store cannot write now (\(state.failureText)); reads still work")
        }
    }

    /// Adds frames to the group the flusher takes next.
    func stage(
        _ state: inout State, bytes: [UInt8], writes: [StagedWrite], waiter: CheckedContinuation<Outcome, any Error>
    ) {
        let base = state.staging.bytes.count
        state.staging.bytes.append(contentsOf: bytes)
        for var write in writes {
            write.offset += base
            if write.kind != .relocate {
                state.pending[write.key] = Pending(
                    version: write.kind == .delete ? 0 : write.version, group: state.staging.number)
            }
            if write.kind != .delete { state.inFlightKeyVersions[write.keyVersion, default: 0] += 1 }
            state.staging.writes.append(write)
        }
        state.staging.waiters.append(waiter)
    }

    func signalFlusher() {
        let wakeNeeded = state.withLock { state in
            defer { state.flusherIdle = false }
            return state.flusherIdle
        }
        if wakeNeeded { wake.signal() }
    }

    // MARK: Group commit

    private enum FlushWork {
        case idle
        case linger
        case write(Group, Segment, UInt64)
    }

    private func flushLoop() {
        var previousWaiters = 0
        var lingered = 0
        while true {
            wake.wait()
            while true {
                let work = state.withLock { state -> FlushWork in
                    if state.staging.isEmpty {
                        state.flusherIdle = true
                        return .idle
                    }
                    // Writers acknowledged by the last group are coming back; wait a moment for
                    // them rather than paying an fsync for a handful (bounded: 4 × 50 µs).
                    if state.staging.waiters.count * 2 < previousWaiters && lingered < 4 && !state.closing {
                        lingered += 1
                        return .linger
                    }
                    let group = state.staging
                    state.staging = Group(number: group.number + 1)
                    state.commitGroups += 1
                    state.committedWaiters += group.waiters.count
                    return .write(group, state.active, state.activeSize)
                }
                switch work {
                case .idle:
                    previousWaiters = 0
                case .linger:
                    usleep(50)
                    continue
                case .write(let group, let active, let size):
                    lingered = 0
                    previousWaiters = group.waiters.count
                    flush(group, active: active, size: size)
                    continue
                }
                break
            }
            let stop = state.withLock { $0.closing && $0.staging.isEmpty }
            if stop { break }
        }
        flusherDone.signal()
    }

    private func flush(_ group: Group, active: Segment, size: UInt64) {
        var segment = active
        var offset = size
        do {
            if size > UInt64(Self.segmentHeaderSize) && size + UInt64(group.bytes.count) > UInt64(options.segmentBytes) {
                segment = try rollSegment(after: active)
                offset = UInt64(Self.segmentHeaderSize)
            }
            try group.bytes.withUnsafeBytes { try segment.file.write($0, at: offset) }
            try segment.file.sync()
        } catch {
            fail(group, segment: segment, offset: offset, error: error)
            return
        }
        let end = offset + UInt64(group.bytes.count)
        let (checkpointDue, compactionDue) = state.withLock { state in
            if state.active !== segment {
                state.active = segment
                state.segments[segment.number] = segment
            }
            state.activeSize = end
            state.segmentSizes[segment.number] = Int(end)
            state.durable = IndexCheckpoint.Position(segment: segment.number, offset: end)
            apply(group, segment: segment.number, base: offset, to: &state)
            state.failedAt = nil
            state.bytesSinceCheckpoint += group.bytes.count
            state.changedSinceCheckpoint = true
            let checkpointDue = state.bytesSinceCheckpoint >= options.checkpointBytes && !state.checkpointScheduled
            if checkpointDue { state.checkpointScheduled = true }
            return (checkpointDue, compactionWanted(state))
        }
        for waiter in group.waiters { waiter.resume(returning: .committed) }
        if checkpointDue {
            DispatchQueue.global().async { [self] in
                try? writeCheckpoint()
            }
        }
        if compactionDue { startAutomaticCompaction() }
    }

    private func apply(_ group: Group, segment: UInt32, base: UInt64, to state: inout State) {
        for write in group.writes {
            let location = RecordLocation(
                segment: segment, offset: UInt32(base + UInt64(write.offset)), length: UInt32(write.length),
                keyVersion: write.keyVersion, version: write.version)
            switch write.kind {
            case .put:
                state.index.upsert(write.key.collection, write.key.id, location)
            case .delete:
                state.index.remove(write.key.collection, write.key.id)
            case .relocate:
                if let entry = state.index.find(write.key.collection, write.key.id),
                    state.index[entry].location.version == write.version
                {
                    state.index.relocate(entry: entry, to: location)
                }
            }
            if write.kind != .relocate, state.pending[write.key]?.group == group.number {
                state.pending[write.key] = nil
            }
            if write.kind != .delete { state.inFlightKeyVersions[write.keyVersion, default: 0] -= 1 }
        }
    }

    /// A write or sync failed: undo the partial append, refuse writes for a while, fail every
    /// waiting writer (later groups may have relied on this one's conditions).
    private func fail(_ group: Group, segment: Segment, offset: UInt64, error: any Error) {
        var undone = true
        do {
            try segment.file.truncate(to: offset)
            try segment.file.sync()
        } catch {
            undone = false
        }
        let text = (error as? FileSystemError)?.message ?? "\(error)"
        let waiters = state.withLock { state -> [CheckedContinuation<Outcome, any Error>] in
            state.failedAt = options.clock.now
            state.failureText = text
            if segment !== state.active {
                state.active = segment
                state.segments[segment.number] = segment
                state.activeSize = offset
                state.segmentSizes[segment.number] = Int(offset)
            }
            if !undone {
                // The tail may hold part of the failed group; never append after it.
                state.activeSize = UInt64(options.segmentBytes) + 1
            }
            let waiters = group.waiters + state.staging.waiters
            for write in group.writes + state.staging.writes where write.kind != .delete {
                state.inFlightKeyVersions[write.keyVersion, default: 0] -= 1
            }
            state.staging = Group(number: state.staging.number + 1)
            state.pending = [:]
            return waiters
        }
        options.logger.error("record store write failed; writes refused until it succeeds again", ["error": .string(text)])
        let failure = StoreError(.unavailable, "the store cannot write now (\(text)); reads still work")
        for waiter in waiters { waiter.resume(throwing: failure) }
    }

    private func rollSegment(after active: Segment) throws -> Segment {
        let number = active.number + 1
        let file = try fileSystem.openFile(segmentPath(number), create: true)
        try Self.writeSegmentHeader(file, number: number)
        try fileSystem.syncDirectory(segmentsDirectory)
        return Segment(number: number, file: file)
    }

    // MARK: Closing

    /// Flushes what is waiting, writes a checkpoint and releases the lock. Idempotent.
    public func close() {
        let alreadyClosing = state.withLock { state -> Bool in
            defer { state.closing = true }
            return state.closing
        }
        guard !alreadyClosing else { return }
        wake.signal()
        flusherDone.wait()
        try? writeCheckpoint(closing: true)
        state.withLock { $0.closed = true }
        maintenance.withLock { _ in lock.release() }
    }

    // MARK: Status

    /// Whether writes are accepted now (false after a failed write, until one succeeds again).
    public var isWritable: Bool {
        state.withLock { state in
            guard let failedAt = state.failedAt else { return !state.closing }
            return options.clock.now.timeIntervalSince(failedAt) >= options.writeRetryInterval
        }
    }

    public var statistics: StoreStatistics {
        state.withLock { state in
            StoreStatistics(
                records: state.index.count, segments: state.segments.count,
                logBytes: state.segmentSizes.values.reduce(0, +),
                liveBytes: state.index.liveBytes.values.reduce(0, +),
                indexMemoryBytes: state.index.memoryBytes, isWritable: state.failedAt == nil,
                commitGroups: state.commitGroups, commits: state.committedWaiters)
        }
    }

    /// Per-client fingerprint keys from the keyring.
    public var fingerprintKeys: any FingerprintKeySource { keyRing.fingerprintKeys }
}
