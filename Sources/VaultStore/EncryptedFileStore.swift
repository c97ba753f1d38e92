import Dispatch
public import Foundation
public import VaultCore
public import VaultCrypto

/// Settings of an ``EncryptedFileStore``. Defaults suit a daemon; tests shrink the sizes.
public struct FileStoreOptions: Sendable {
    /// A segment file is closed to appends once it reaches this size.
    public var segmentBytes: Int
    /// The active segment is extended by this much, in zeros, ahead of the appends, so that the
    /// fdatasync of a group writes its data only, not the file's new size (about half the time
    /// per sync on ext4). Recovery reads zeros at the end of a segment as its end. 0 turns it off;
    /// zeros that do not fit (a nearly full disk) are skipped, never failing a write.
    public var preallocationBytes: Int
    /// A new index checkpoint is written after this many bytes of log, or after as many bytes as the last
    /// checkpoint held if that is more: writing the index then costs at most as much I/O as the log it covers
    /// (never a whole large index per few MiB of log), and start-up replays at most that much log.
    public var checkpointBytes: Int
    /// A checkpoint reaches its file in pieces of this many bytes, each made durable before the next: a sync of
    /// the log, queued behind the checkpoint's dirty pages, then waits for one piece, not for the whole index.
    var checkpointChunkBytes = 4 << 20
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
    /// When the current data key is replaced by itself (seal count and age limits).
    public var keyRotation: KeyRotationPolicy
    /// The master key in hand (rebuilt from shares, or in an HSM); nil reads `<keys>/master.key` (development).
    public var masterKey: (any KeyEncryptionKey)?
    /// Moves stored values to a newer format: given a record's collection and plaintext value, the value in the
    /// current format, or nil to leave it as it is. Rewrap and compaction apply it to every record they move, so
    /// records written by an earlier build (JSON) move forward. The domain layer sets it; nil keeps values.
    public var valueUpgrade: (@Sendable (_ collection: String, _ value: [UInt8]) -> [UInt8]?)?
    /// A group of at least this many writes is indexed later: while the next group syncs, or by
    /// the first reader of the index. Under heavy write load (large groups) this takes the index
    /// update out of the writers' CPU-bound way back; a smaller group is indexed at once, since
    /// waking the indexer thread for it costs more than it saves. Tests lower it.
    var deferIndexFromWrites = 32
    /// Whether the indexer thread indexes a waiting group while the next group syncs. Tests turn
    /// it off to hold the update until a reader or the next group makes it.
    var indexesWhileSyncing = true
    /// Index entries compaction looks at per hold of the state lock while it finds the live records
    /// of a segment; reads and commits take the lock between two such chunks. Tests lower it.
    var compactionScanEntries = 4096
    /// Called by compaction after each chunk of that walk, with the segment and the entry range it
    /// looked at, while the lock is free. Tests change records there; nil otherwise.
    var compactionScanned: (@Sendable (_ segment: UInt32, _ entries: Range<Int>) async -> Void)?

    public init(
        segmentBytes: Int = 64 << 20,
        preallocationBytes: Int = 4 << 20,
        checkpointBytes: Int = 64 << 20,
        compactionGarbageRatio: Double = 0.5,
        compactionMinimumBytes: Int = 256 << 20,
        automaticCompaction: Bool = true,
        writeRetryInterval: TimeInterval = 1,
        fileSystem: any StorageFileSystem = SystemFileSystem(),
        clock: any WallClock = SystemClock(),
        logger: Logger = .disabled,
        keyRotation: KeyRotationPolicy = KeyRotationPolicy()
    ) {
        self.segmentBytes = segmentBytes
        self.preallocationBytes = preallocationBytes
        self.checkpointBytes = checkpointBytes
        self.compactionGarbageRatio = compactionGarbageRatio
        self.compactionMinimumBytes = compactionMinimumBytes
        self.automaticCompaction = automaticCompaction
        self.writeRetryInterval = writeRetryInterval
        self.fileSystem = fileSystem
        self.clock = clock
        self.logger = logger
        self.keyRotation = keyRotation
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
    /// Index checkpoints the log's growth started since opening, and the size of the last one written or loaded
    /// (not to be confused with ``FileStoreOptions/checkpointBytes``, the least log between two).
    public var automaticCheckpoints: Int
    public var lastCheckpointBytes: Int
}

/// The default record store: encrypted, append-only segment files in a data directory.
///
/// Layout of the data directory (0700, every file 0600): `LOCK` (held by the owning process),
/// `keyring.json` (data keys wrapped by the master key), `segments/NNNNNNNN.seg` (the log of
/// ``RecordFrame``s), `index.checkpoint` (see ``IndexCheckpoint``) and, while the daemon runs,
/// `admin.sock`.
///
/// Writers queue their writes and wait. One flusher thread forms groups: it takes what is queued,
/// checks the conditions in queue order (one lock per pull) and seals the values at once; while
/// fewer writers are gathered than it expects back (those the last group acknowledged, plus those
/// that queued while it was written), it waits for more (bounded by the last group's flush) and
/// seals those too, so sealing overlaps the writers' return and a closed loop of N writers shares
/// one fsync instead of splitting into alternating parts. Then it appends the group in one
/// `write` and one `fdatasync` (group commit) and acknowledges every writer of the group under the
/// index lock. A small group is indexed there and then; a large one's index update waits
/// (`deferIndexFromWrites`): the indexer thread makes it while the next group syncs (when the
/// CPU is otherwise idle, not while the writers come back), a slice of writes per hold of the lock.
/// Until then a read by id finds the group's write of its record through the writes still pending
/// (so a writer's next read sees its write), anything else that reads the index first makes the
/// rest of it (``withState(_:)``), and the flusher checks new writes against the pending ones.
/// Reads look the record up in the in-memory index and `pread` its frame.
/// Call ``close()`` when done: it writes a checkpoint and releases the lock.
public final class EncryptedFileStore: RecordStore, Sendable {
    public let directory: String
    public let keyRing: KeyRing
    /// What recovery found when the store was opened.
    public let recovery: RecoveryReport
    public let options: FileStoreOptions
    let fileSystem: any StorageFileSystem
    let segmentsDirectory: String
    private let lock: DataDirectoryLock
    let state: Locked<State>
    let intake = Locked(Intake())
    private let wake = ThreadWakeup()
    private let flusherDone = ThreadWakeup()
    /// Signalled before each sync: the indexer thread then makes the last group's index update.
    private let indexerWake = ThreadWakeup()
    private let indexerDone = ThreadWakeup()
    /// Serialises checkpoints and segment removal.
    let maintenance = Locked<Void>(())
    let compacting = Locked<Bool>(false)
    /// Group commits, fsync latency, compaction (`/metrics`, ``storeMetricsText()``).
    public let metrics = StoreMetrics()

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

    /// A record's names, hashed once when made: the flusher looks each write's key up and stores
    /// and removes it in the pending map, so its hash is computed once rather than each time.
    struct RecordKey: Hashable {
        let collection: String
        let id: String
        private let hash: UInt64

        init(collection: String, id: String) {
            self.collection = collection
            self.id = id
            // Over the names' UTF-8 in place, eight bytes a step (not `String.utf8` a byte at a
            // time), the collection's length between them; the dictionary mixes it further.
            let seeded = withBytes(collection) { Self.mix($0, into: 0xCBF2_9CE4_8422_2325) }
            let separated = (seeded ^ UInt64(collection.utf8.count)) &* Self.multiplier
            hash = withBytes(id) { Self.mix($0, into: separated) }
        }

        private static let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15

        /// Folds `bytes` into `hash`: whole 8-byte words, then the tail as one zero-padded word.
        private static func mix(_ bytes: UnsafeRawBufferPointer, into hash: UInt64) -> UInt64 {
            var hash = hash
            var offset = 0
            while offset + 8 <= bytes.count {
                let word = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                hash = ((hash &<< 5 | hash &>> 59) ^ word) &* multiplier
                offset += 8
            }
            if offset < bytes.count {
                var tail: UInt64 = 0
                for position in offset..<bytes.count {
                    tail |= UInt64(bytes[position]) &<< (UInt64(position - offset) &* 8)
                }
                hash = ((hash &<< 5 | hash &>> 59) ^ tail ^ 0x80) &* multiplier
            }
            return hash
        }

        static func == (left: RecordKey, right: RecordKey) -> Bool {
            left.hash == right.hash && left.id == right.id && left.collection == right.collection
        }

        func hash(into hasher: inout Hasher) { hasher.combine(hash) }
    }

    /// A caller waiting for its writes, resumed with the version each write wrote.
    typealias Waiter = UnsafeContinuation<[UInt64], any Error>

    /// Queues work for the flusher and waits until its group is synced (or the work refused).
    func awaitGroup(
        _ work: (Waiter) -> QueuedWork, whenQueued: (_ queued: Bool) -> Void = { _ in }
    ) async throws
        -> [UInt64]
    {
        try await withUnsafeThrowingContinuation { (waiter: Waiter) in
            whenQueued(enqueue(work(waiter)))
        }
    }

    /// Work queued for the flusher, in arrival order.
    enum QueuedWork {
        /// A caller's atomic batch of writes.
        case writes(QueuedBatch, Waiter)
        /// Frames that replace records' current frames if those are still where they were
        /// (compaction, rewrap); `requireCurrentKey` drops those not under the current data key.
        case relocations([Relocation], requireCurrentKey: Bool, Waiter)

        var waiter: Waiter {
            switch self {
            case .writes(_, let waiter), .relocations(_, _, let waiter): waiter
            }
        }
    }

    /// One record write of a group, its offset relative to the group's start.
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

    /// What the flusher appends with one `write` and one `fdatasync`.
    struct Group {
        /// Groups are numbered in the order they are formed.
        var number: UInt64
        var bytes: [UInt8] = []
        var writes: [StagedWrite] = []
        /// The callers, with the versions to answer each.
        var waiters: [(Waiter, [UInt64])] = []
        /// The group's puts and relocations per data key version (in flight until indexed).
        var keyVersions: [UInt32: Int] = [:]
    }

    /// A write not yet in the index: the version it gives its record (0: deleted), its group, and its place in the
    /// group's writes (``Group/writes``).
    struct PendingWrite {
        var version: UInt64
        var group: UInt64
        var slot: Int
    }

    /// A group synced and answered whose index update waits for the next sync (when the CPU is
    /// otherwise idle) or for the first reader of the index, whichever comes first. The indexer
    /// makes it a slice at a time (``indexSlice`` writes), from `next` on.
    struct UnindexedGroup {
        var group: Group
        var segment: UInt32
        var base: UInt64
        var next = 0

        /// Where the group put `write`.
        func location(of write: StagedWrite) -> RecordLocation {
            RecordLocation(
                segment: segment, offset: UInt32(base + UInt64(write.offset)), length: UInt32(write.length),
                keyVersion: write.keyVersion, version: write.version)
        }
    }

    /// Writes of an answered group indexed per hold of the state's lock by the indexer thread: readers by id wait for
    /// one slice at most (they find the group's writes without its index update, ``State/answeredWrite(_:)``).
    static let indexSlice = 8

    /// What writers and the flusher share, under its own lock so that queueing a write never
    /// waits for the index.
    struct Intake {
        var queue: [QueuedWork] = []
        var flusherIdle = true
        /// While the flusher lingers: the queue length at which a writer wakes it (0: not lingering).
        var lingerTarget = 0
        var closing = false
        var failedAt: Date?
        var failureText = ""
    }

    struct State {
        var index: RecordIndex
        /// The writes of the groups formed and not yet in the index (the group being formed, the
        /// one being written, the one answered and not yet indexed), for the conditions of the
        /// writes after them.
        var pending: [RecordKey: PendingWrite] = [:]
        /// The last group answered, if its index update has not been made yet (or not all of it). Reads by id
        /// look its writes up in `pending`; everything else that reads the index goes through
        /// ``EncryptedFileStore/withState(_:)``, which makes the rest of it first.
        var unindexed: UnindexedGroup?
        var segments: [UInt32: Segment]
        var segmentSizes: [UInt32: Int]
        var active: Segment
        /// Where the next group goes in the active segment (the end of its log).
        var activeSize: UInt64
        /// The active segment's file size: zeros from `activeSize` to here are preallocated (or,
        /// after zeros that did not fit, where preallocation is tried again).
        var activeAllocated: UInt64
        var durable: IndexCheckpoint.Position
        var closed = false
        var bytesSinceCheckpoint = 0
        /// Bytes of the last checkpoint written or loaded.
        var checkpointSize = 0
        var automaticCheckpoints = 0
        var changedSinceCheckpoint = false
        var checkpointScheduled = false
        /// Writes not yet in the index, per data key version.
        var inFlightKeyVersions: [UInt32: Int] = [:]
        var recoveryDamage: [String]
        var commitGroups = 0
        var committedWaiters = 0

        /// Forgets what a group that is done (indexed, or failed) left pending and in flight; a
        /// later group's pending write of the same record stays.
        mutating func forget(_ group: Group) {
            for write in group.writes where pending[write.key]?.group == group.number {
                pending[write.key] = nil
            }
            for (version, count) in group.keyVersions {
                let left = (inFlightKeyVersions[version] ?? 0) - count
                inFlightKeyVersions[version] = left > 0 ? left : nil
            }
        }

        /// Makes the index update of the last group answered, if it is still waiting: all of it, or at most
        /// `limit` more of its writes.
        /// - Returns: whether part of it is still waiting.
        @discardableResult
        mutating func indexAnsweredGroup(limit: Int = .max) -> Bool {
            guard var waiting = unindexed else { return false }
            let end =
                waiting.group.writes.count - waiting.next > limit ? waiting.next + limit : waiting.group.writes.count
            apply(waiting, writes: waiting.next..<end)
            guard end < waiting.group.writes.count else {
                unindexed = nil
                forget(waiting.group)
                return false
            }
            waiting.next = end
            unindexed = waiting
            return true
        }

        /// The write of the answered group not yet indexed that is the latest of record `key`: nil when that group
        /// has no write of it. (Its later writes, if any, belong to groups not answered yet: the caller then cannot
        /// tell from `pending` whether the answered group wrote the record, and must index that group first.)
        func answeredWrite(_ key: RecordKey) -> (found: StagedWrite?, known: Bool) {
            guard let waiting = unindexed, let write = pending[key] else { return (nil, true) }
            guard write.group == waiting.group.number else { return (nil, write.group < waiting.group.number) }
            return (waiting.group.writes[write.slot], true)
        }

        /// Updates the index with a synced group's writes.
        mutating func apply(_ group: Group, segment: UInt32, base: UInt64) {
            apply(UnindexedGroup(group: group, segment: segment, base: base), writes: group.writes.indices)
            forget(group)
        }

        private mutating func apply(_ waiting: UnindexedGroup, writes: Range<Int>) {
            for write in waiting.group.writes[writes] {
                let location = waiting.location(of: write)
                switch write.kind {
                case .put:
                    index.upsert(write.key.collection, write.key.id, location)
                case .delete:
                    index.remove(write.key.collection, write.key.id)
                case .relocate:
                    if let entry = index.find(write.key.collection, write.key.id),
                        index[entry].location.version == write.version
                    {
                        index.relocate(entry: entry, to: location)
                    }
                }
            }
        }
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
            let keyRing = try KeyRing.open(
                dataDirectory: directory, keysDirectory: keysDirectory, masterKey: options.masterKey,
                clock: options.clock, policy: options.keyRotation)
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
        // The entry for `segments/` is durable in its parent before the first record is written
        // into it (otherwise it waits for the first checkpoint's rename): one fsync per open.
        try fileSystem.syncDirectory(directory)
        let (state, report) = try Self.recover(
            directory: directory, segmentsDirectory: segmentsDirectory, fileSystem: fileSystem, logger: options.logger)
        self.state = Locked(state)
        self.recovery = report
        options.logger.info(
            "record store opened",
            [
                "records": .int(report.records), "checkpoint": .bool(report.usedCheckpoint),
                "replayed": .int(report.framesReplayed), "tornTailBytes": .int(report.tornTailBytes),
                "damaged": .int(report.damage.count + report.corruptedRecords),
            ])
        Thread.named("cv-flusher") { [self] in self.flushLoop() }.start()
        Thread.named("cv-indexer") { [self] in self.indexLoop() }.start()
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
        var checkpointSize = 0
        let checkpointPath = (directory as NSString).appendingPathComponent(IndexCheckpoint.fileName)
        if let file = try? fileSystem.openFile(checkpointPath, create: false) {
            let bytes = try file.read(count: Int(try file.size()), at: 0)
            // The position must lie inside its segment, after the header (2^63 would trap as an Int).
            if let (loaded, position) = IndexCheckpoint.decode(bytes), numbers.contains(position.segment),
                position.offset >= UInt64(segmentHeaderSize),
                let segmentSize = try? fileSystem.openFile(path(position.segment), create: false).size(),
                position.offset <= segmentSize
            {
                index = loaded
                start = position
                usedCheckpoint = true
                checkpointSize = bytes.count
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
        var activeAllocated: UInt64 = UInt64(segmentHeaderSize)
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
                    activeAllocated = activeSize
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
            if result.droppedFrames > 0 {
                damage.append(
                    "segment \(number): \(result.droppedFrames) sound frames dropped with their damaged batches")
            }
            sizes[number] = result.end
            if result.tornBytes > 0 {
                if isLast {
                    torn += result.tornBytes
                    try file.truncate(to: UInt64(result.end))
                    try file.sync()
                } else {
                    damage.append("segment \(number) offset \(result.end) (\(result.tornBytes) bytes, unfinished)")
                }
            }
            if isLast {
                activeSize = UInt64(result.end)
                activeAllocated = result.tornBytes > 0 ? activeSize : UInt64(size)
            }
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
            activeAllocated = activeSize
        }
        let report = RecoveryReport(
            usedCheckpoint: usedCheckpoint, framesReplayed: replayed, tornTailBytes: torn, damage: damage,
            corruptedRecords: index.corruptedCount, records: index.count)
        var state = State(
            index: index, segments: segments, segmentSizes: sizes, active: active,
            activeSize: activeSize, activeAllocated: activeAllocated,
            durable: IndexCheckpoint.Position(segment: active.number, offset: activeSize),
            changedSinceCheckpoint: replayed > 0 || !usedCheckpoint, recoveryDamage: damage)
        state.checkpointSize = checkpointSize
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

    /// The state with its index up to date: the last group answered is indexed first, if it
    /// is not yet. Everything that reads the index goes through here, except the flusher's
    /// checks of new writes and reads by id, which see that group's writes as pending.
    func withState<T>(_ body: (inout State) throws -> T) rethrows -> T {
        try state.withLock { state in
            state.indexAnsweredGroup()
            return try body(&state)
        }
    }

    /// The indexer thread: makes the last group's index update while the next group syncs, when
    /// the CPU is otherwise idle.
    private func indexLoop() {
        while true {
            indexerWake.wait()
            if intake.withLock({ $0.closing }) { break }
            // A slice per hold of the lock, so that a reader waits for one slice, not the whole group; only the
            // group it was woken for (the flusher may answer the next one meanwhile, which waits for its own sync).
            var woken: UInt64?
            while state.withLock({ state in
                guard let waiting = state.unindexed, woken == nil || waiting.group.number == woken else { return false }
                woken = waiting.group.number
                return state.indexAnsweredGroup(limit: Self.indexSlice)
            }) {}
        }
        indexerDone.signal()
    }

    // MARK: RecordStore

    public func get(_ collection: String, id: String) async throws -> Record? {
        try read(collection, id: id)
    }

    /// Reads one record synchronously (see ``get(_:id:)``).
    public func read(_ collection: String, id: String) throws -> Record? {
        let found = try state.withLock { state -> (RecordLocation, Bool, Segment?)? in
            guard !state.closed else { throw StoreError(.closed, "the store is closed") }
            // The answered group's write of the record, if it is not indexed yet: readers do not wait for that
            // group's index update (nor make it), unless a later group's write hides whether it has one.
            if state.unindexed != nil {
                let (write, known) = state.answeredWrite(RecordKey(collection: collection, id: id))
                if let write {
                    guard write.kind != .delete, let location = state.unindexed?.location(of: write) else { return nil }
                    return (location, false, state.segments[location.segment])
                }
                if !known { state.indexAnsweredGroup() }
            }
            guard let entry = state.index.find(collection, id) else { return nil }
            let item = state.index[entry]
            return (item.location, item.flags & RecordIndex.corrupted != 0, state.segments[item.location.segment])
        }
        guard let (location, corrupted, segment) = found else { return nil }
        guard !corrupted, let segment else {
            metrics.readFailed()
            throw StoreError(.corrupted, "record \(collection)/\(id) is damaged on disk")
        }
        let value: [UInt8]
        do {
            value = try open(collection, id, location, in: segment)
        } catch let error as StoreError where error.code == .corrupted {
            markDamaged(collection, id, at: location)
            throw error
        }
        return Record(collection: collection, id: id, version: location.version, value: value)
    }

    /// Reads and authenticates the frame at `location`, returning the plaintext value.
    ///
    /// The frame and the AAD live in scratch space (on the stack for any usual record) and the value is opened
    /// straight into the array returned: one allocation per read, and no lock beyond the cipher context pool's.
    func open(_ collection: String, _ id: String, _ location: RecordLocation, in segment: Segment) throws -> [UInt8] {
        let length = Int(location.length)
        return try withUnsafeTemporaryAllocation(byteCount: length, alignment: 8) { frame in
            let got: Int
            do {
                got = try segment.file.read(into: frame, at: UInt64(location.offset))
            } catch {
                throw StoreError(.unavailable, "cannot read record \(collection)/\(id): \(error)")
            }
            guard got == length else {
                throw StoreError(.corrupted, "record \(collection)/\(id) is cut short on disk")
            }
            guard let key = keyRing.key(version: location.keyVersion) else {
                throw StoreError(
                    .corrupted,
                    "record \(collection)/\(id) is sealed under data key version \(location.keyVersion), which is retired"
                )
            }
            return try withBytes(collection) { collectionBytes in
                try withBytes(id) { idBytes in
                    let namesEnd = RecordFrame.fixedHeaderSize + collectionBytes.count + idBytes.count
                    guard namesEnd + AESGCM.overhead + RecordFrame.trailerSize <= length else {
                        throw StoreError(.corrupted, "record \(collection)/\(id) failed authentication")
                    }
                    let sealed = UnsafeRawBufferPointer(rebasing: frame[namesEnd..<length - RecordFrame.trailerSize])
                    let plainCount = sealed.count - AESGCM.overhead
                    let aadSize = RecordFrame.authenticatedDataSize(collection: collectionBytes, id: idBytes)
                    return try withUnsafeTemporaryAllocation(byteCount: aadSize, alignment: 8) { aad in
                        RecordFrame.writeAuthenticatedData(
                            into: aad, kind: .put, collection: collectionBytes, id: idBytes,
                            keyVersion: location.keyVersion, recordVersion: location.version)
                        do {
                            return try [UInt8](unsafeUninitializedCapacity: plainCount) { plain, initialized in
                                try AESGCM.openDetached(
                                    UnsafeRawBufferPointer(
                                        rebasing: sealed[AESGCM.nonceSize..<AESGCM.nonceSize + plainCount]),
                                    key: key, nonce: UnsafeRawBufferPointer(rebasing: sealed[0..<AESGCM.nonceSize]),
                                    aad: UnsafeRawBufferPointer(aad),
                                    tag: UnsafeRawBufferPointer(rebasing: sealed[(AESGCM.nonceSize + plainCount)...]),
                                    plaintext: UnsafeMutableRawBufferPointer(plain))
                                initialized = plainCount
                            }
                        } catch {
                            throw StoreError(.corrupted, "record \(collection)/\(id) failed authentication")
                        }
                    }
                }
            }
        }
    }

    public func scan(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> [Record] {
        let found = try withState { state -> [(String, RecordLocation, Bool, Segment?)] in
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
                metrics.readFailed()
                throw StoreError(.corrupted, "record \(collection)/\(id) is damaged on disk")
            }
            do {
                return Record(
                    collection: collection, id: id, version: location.version,
                    value: try open(collection, id, location, in: segment))
            } catch let error as StoreError where error.code == .corrupted {
                markDamaged(collection, id, at: location)
                throw error
            }
        }
    }

    /// Counts from the in-memory index: no value is read or decrypted.
    public func count(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> Int {
        try withState { state in
            guard !state.closed else { throw StoreError(.closed, "the store is closed") }
            // A whole collection is counted without a walk (the sweeper counts every kind each round).
            if prefix.isEmpty && after == nil { return min(state.index.count(of: collection), max(0, limit)) }
            return state.index.scan(collection, prefix: prefix, after: after, limit: limit).count
        }
    }

    @discardableResult
    public func commit(_ writes: [RecordWrite]) async throws -> [UInt64] {
        try await commit(writes, whenQueued: { _ in })
    }

    /// ``commit(_:)``; `whenQueued` runs once the batch is in the flusher's queue (whose order is the order in
    /// which conditions are checked), or at once when it is refused before that.
    @discardableResult
    public func commit(
        _ writes: [RecordWrite], whenQueued: @Sendable (_ queued: Bool) -> Void
    ) async throws
        -> [UInt64]
    {
        var queued = false
        defer { if !queued { whenQueued(false) } }
        guard !writes.isEmpty else { return [] }
        for write in writes {
            try RecordName.validate(write.collection, what: "collection")
            try RecordName.validate(write.id, what: "record id")
            if case .put(_, _, let value, _) = write, value.count > RecordFrame.maximumValueSize {
                throw StoreError(
                    .invalidArgument, "a record value may hold at most \(RecordFrame.maximumValueSize) bytes")
            }
        }
        let batch = QueuedBatch(writes)
        queued = true
        return try await awaitGroup({ .writes(batch, $0) }, whenQueued: whenQueued)
    }

    /// Queues work for the flusher, waking it when it is idle (or lingering and the queue is full
    /// enough); fails the waiter at once when the store takes no writes now.
    /// - Returns: whether the work was queued.
    @discardableResult
    func enqueue(_ work: QueuedWork) -> Bool {
        let result: Result<Bool, any Error> = intake.withLock { intake in
            do {
                try checkWritable(intake)
            } catch {
                return .failure(error)
            }
            intake.queue.append(work)
            if intake.flusherIdle {
                intake.flusherIdle = false
                return .success(true)
            }
            if intake.lingerTarget > 0 && intake.queue.count >= intake.lingerTarget {
                intake.lingerTarget = 0
                return .success(true)
            }
            return .success(false)
        }
        switch result {
        case .success(let wakeFlusher):
            if wakeFlusher { wake.signal() }
            return true
        case .failure(let error):
            work.waiter.resume(throwing: error)
            return false
        }
    }

    /// Checks every condition against the durable index and the writes not yet durable.
    /// - Returns: per write, the version it writes (a delete: the version it removes), or nil for
    ///   the delete of an absent record, which writes nothing.
    static func resolve(_ writes: [RecordWrite], keys: [RecordKey], _ state: State) throws -> [UInt64?] {
        // The versions this batch gives its records so far, for a later write of the same record: a
        // batch of a few writes looks its earlier ones up in order (no dictionary to build and grow).
        let searchesInOrder = writes.count <= 16
        var local: [RecordKey: UInt64] = [:]
        if !searchesInOrder { local.reserveCapacity(writes.count) }
        var result: [UInt64?] = []
        result.reserveCapacity(writes.count)
        for (position, (write, key)) in zip(writes, keys).enumerated() {
            let current: UInt64
            let staged: UInt64?
            if position == 0 {
                staged = nil
            } else if searchesInOrder {
                staged = Self.stagedVersion(of: key, before: position, writes: writes, keys: keys, versions: result)
            } else {
                staged = local[key]
            }
            if let staged {
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
                guard current == 0 else {
                    throw StoreError(.conflict, "\(write.collection)/\(write.id) exists already")
                }
            case .version(let expected):
                guard current == expected, expected > 0 else {
                    throw StoreError(.conflict, "\(write.collection)/\(write.id) changed since it was read")
                }
            }
            switch write {
            case .put:
                result.append(current + 1)
                if !searchesInOrder { local[key] = current + 1 }
            case .delete:
                result.append(current == 0 ? nil : current)
                if !searchesInOrder { local[key] = 0 }
            }
        }
        return result
    }

    /// The version the last earlier write of `key` in a batch leaves its record at (0: deleted or
    /// absent), or nil when no earlier write of the batch names it.
    private static func stagedVersion(
        of key: RecordKey, before position: Int, writes: [RecordWrite], keys: [RecordKey], versions: [UInt64?]
    ) -> UInt64? {
        var earlier = position - 1
        while earlier >= 0 {
            if keys[earlier] == key {
                if case .put = writes[earlier] { return versions[earlier] }
                return 0
            }
            earlier -= 1
        }
        return nil
    }

    private func checkWritable(_ intake: Intake) throws {
        guard !intake.closing else { throw StoreError(.closed, "the store is closed") }
        if let failedAt = intake.failedAt, options.clock.now.timeIntervalSince(failedAt) < options.writeRetryInterval {
            throw Self.writesRefused(intake.failureText)
        }
    }

    // MARK: Group commit

    /// A group whose conditions are checked, waiting to be sealed; and the work refused.
    private struct PlannedGroup {
        enum Entry {
            /// An accepted batch: its writes and the version of each (nil: nothing to write).
            case batch([RecordWrite], versions: [UInt64?])
            /// The relocation frames kept.
            case relocations([[UInt8]])
        }
        /// In queue order, which is the order of the group's ``StagedWrite``s.
        var entries: [Entry] = []
        var refused: [(Waiter, any Error)] = []
    }

    private enum GatherDecision {
        case idle
        case take([QueuedWork])
        case linger(until: DispatchTime)
        case write
    }

    private func flushLoop() {
        var lastGroupWaiters = 0
        // The callers the group being gathered waits for: those queued when it started (they came
        // while the last group was written) and those the last group acknowledged, which a closed
        // loop of writers sends back.
        var expectedWaiters = 0
        var queuedDuringFlush = 0
        var lastFlushNanoseconds: UInt64 = 0
        // The group being gathered: each pull from the queue is checked and sealed at once, so
        // that sealing overlaps the wait for the writers still coming back.
        var group: Group?
        var groupNumber: UInt64 = 0
        var deadline = DispatchTime.now()
        var idleSince: UInt64 = 0
        while true {
            wake.wait()
            // The writers of the last group come back within about one flush; after a longer
            // pause they are not a closed loop, so nothing is waited for.
            if DispatchTime.now().uptimeNanoseconds - idleSince > max(2 * lastFlushNanoseconds, 1_000_000) {
                lastGroupWaiters = 0
                queuedDuringFlush = 0
            }
            while true {
                let gathered = group?.waiters.count ?? 0
                let decision = intake.withLock { intake -> GatherDecision in
                    if !intake.queue.isEmpty {
                        intake.lingerTarget = 0
                        defer { intake.queue.removeAll(keepingCapacity: true) }
                        return .take(intake.queue)
                    }
                    guard group != nil else {
                        intake.flusherIdle = true
                        intake.lingerTarget = 0
                        return .idle
                    }
                    // The writers the last group acknowledged are coming back: wait for them (at most
                    // as long as the last group's flush took) rather than paying an fsync for the
                    // first few.
                    if gathered < expectedWaiters && DispatchTime.now() < deadline && !intake.closing {
                        intake.lingerTarget = expectedWaiters - gathered
                        return .linger(until: deadline)
                    }
                    intake.lingerTarget = 0
                    return .write
                }
                switch decision {
                case .idle:
                    idleSince = DispatchTime.now().uptimeNanoseconds
                case .linger(let until):
                    _ = wake.wait(timeout: until)
                    continue
                case .take(let queue):
                    // Held alone while it grows, so that its bytes are appended in place.
                    var gathering: Group
                    if let started = group {
                        gathering = started
                        group = nil
                    } else {
                        expectedWaiters = queuedDuringFlush + lastGroupWaiters
                        deadline = .now() + .nanoseconds(Int(min(max(lastFlushNanoseconds, 20_000), 1_000_000)))
                        groupNumber += 1
                        gathering = Group(number: groupNumber)
                    }
                    // Not `withState`: the last group's index update waits for the next sync. The
                    // seals are reserved for every put of a chunk (refused ones overcount, never
                    // under), under the lock so that no retire comes between the key and its
                    // in-flight count. A chunk holds at most one data key's seal limit, so a queue
                    // longer than that spans a rotation instead of failing.
                    var sealFailed = false
                    for chunk in Self.sealChunks(queue, limit: keyRing.policy.maximumSeals) {
                        if sealFailed {
                            let refusal = StoreError(.unavailable, "cannot seal a record")
                            for work in chunk.work { work.waiter.resume(throwing: refusal) }
                            continue
                        }
                        let firstWrite = gathering.writes.count
                        let reserved = state.withLock { state -> Result<(PlannedGroup, SealReservation), any Error> in
                            let reservation: SealReservation
                            do {
                                reservation = try keyRing.reserveSeals(chunk.seals)
                            } catch {
                                return .failure(error)
                            }
                            return .success(
                                (plan(chunk.work, group: &gathering, key: reservation.version, in: &state), reservation)
                            )
                        }
                        switch reserved {
                        case .failure(let error):
                            options.logger.error(
                                "cannot reserve data key seals; writes refused",
                                ["error": .string(String(describing: error)), "seals": .int(chunk.seals)])
                            let refusal =
                                (error as? KeyRingError)?.code == .sealLimit
                                ? StoreError(
                                    .invalidArgument,
                                    "a batch of \(chunk.seals) puts exceeds the seal limit of a data key")
                                : StoreError(.unavailable, "cannot reserve data key seals: \(error)")
                            for work in chunk.work { work.waiter.resume(throwing: refusal) }
                        case .success(let (planned, reservation)):
                            if let rotation = reservation.rotation { logAutomaticRotation(rotation) }
                            for (waiter, error) in planned.refused { waiter.resume(throwing: error) }
                            let key = (version: reservation.version, key: reservation.key)
                            if !seal(planned, into: &gathering, from: firstWrite, key: key) { sealFailed = true }
                        }
                    }
                    if !sealFailed { group = gathering }
                    continue
                case .write:
                    let full = group!
                    group = nil
                    lastGroupWaiters = full.waiters.count
                    let started = DispatchTime.now().uptimeNanoseconds
                    queuedDuringFlush = 0
                    if let queued = flush(full) {
                        lastFlushNanoseconds = DispatchTime.now().uptimeNanoseconds - started
                        queuedDuringFlush = queued
                    }
                    continue
                }
                break
            }
            let stop = intake.withLock { $0.closing && $0.queue.isEmpty }
            if stop { break }
        }
        flusherDone.signal()
    }

    /// Splits queued work, in order, into runs of at most `limit` puts (one work alone when it has
    /// more), with the number of seals each run needs.
    static func sealChunks(_ queue: [QueuedWork], limit: UInt64) -> [(work: [QueuedWork], seals: Int)] {
        var chunks: [(work: [QueuedWork], seals: Int)] = []
        var current: [QueuedWork] = []
        var seals = 0
        for work in queue {
            var puts = 0
            if case .writes(let batch, _) = work {
                for write in batch.writes { if case .put = write { puts += 1 } }
            }
            if !current.isEmpty && UInt64(seals + puts) > limit {
                chunks.append((current, seals))
                current = []
                seals = 0
            }
            current.append(work)
            seals += puts
        }
        if !current.isEmpty { chunks.append((current, seals)) }
        return chunks
    }

    /// Checks the conditions of the queued work in order, under the lock: accepted writes become
    /// pending (so later work in the queue sees them) and their callers join the group's waiters;
    /// refused ones are returned to be answered with the reason.
    private func plan(_ queue: [QueuedWork], group: inout Group, key: UInt32, in state: inout State) -> PlannedGroup {
        var planned = PlannedGroup()
        var puts = 0
        defer {
            if puts > 0 {
                state.inFlightKeyVersions[key, default: 0] += puts
                group.keyVersions[key, default: 0] += puts
            }
        }
        for work in queue {
            switch work {
            case .writes(let batch, let waiter):
                let (writes, keys) = (batch.writes, batch.keys)
                let versions: [UInt64?]
                do {
                    versions = try Self.resolve(writes, keys: keys, state)
                } catch {
                    planned.refused.append((waiter, error))
                    continue
                }
                for (write, (recordKey, version)) in zip(writes, zip(keys, versions)) {
                    guard let version else { continue }  // deleting an absent record
                    let isPut: Bool
                    if case .put = write { isPut = true } else { isPut = false }
                    state.pending[recordKey] = PendingWrite(
                        version: isPut ? version : 0, group: group.number, slot: group.writes.count)
                    if isPut { puts += 1 }
                    group.writes.append(
                        StagedWrite(
                            kind: isPut ? .put : .delete, key: recordKey, offset: 0, length: 0,
                            keyVersion: isPut ? key : 0, version: version))
                }
                planned.entries.append(.batch(writes, versions: versions))
                group.waiters.append(
                    (
                        waiter,
                        zip(writes, versions).map { write, version in
                            if case .delete = write { return 0 }
                            return version ?? 0
                        }
                    ))
            case .relocations(let relocations, let requireCurrentKey, let waiter):
                var frames: [[UInt8]] = []
                for relocation in relocations {
                    guard state.pending[relocation.key] == nil,
                        !requireCurrentKey || relocation.keyVersion == key,
                        let entry = state.index.find(relocation.key.collection, relocation.key.id),
                        state.index[entry].location == relocation.expected
                    else { continue }
                    state.inFlightKeyVersions[relocation.keyVersion, default: 0] += 1
                    group.keyVersions[relocation.keyVersion, default: 0] += 1
                    group.writes.append(
                        StagedWrite(
                            kind: .relocate, key: relocation.key, offset: 0, length: relocation.frame.count,
                            keyVersion: relocation.keyVersion, version: relocation.expected.version))
                    frames.append(relocation.frame)
                }
                planned.entries.append(.relocations(frames))
                group.waiters.append((waiter, []))
            }
        }
        return planned
    }

    /// Seals the planned writes onto the group's bytes, in the order `plan` listed them (its
    /// writes from `firstWrite` on), and fills in each frame's offset and length.
    /// - Returns: false when sealing failed and the whole group was failed.
    private func seal(
        _ planned: PlannedGroup, into group: inout Group, from firstWrite: Int,
        key: (version: UInt32, key: SymmetricKey)
    ) -> Bool {
        var bytes = group.bytes
        group.bytes = []
        var position = firstWrite
        do {
            for entry in planned.entries {
                switch entry {
                case .batch(let writes, let versions):
                    let first = versions.firstIndex { $0 != nil }
                    let last = versions.lastIndex { $0 != nil }
                    for (index, (write, version)) in zip(writes, versions).enumerated() {
                        guard let version else { continue }
                        let flags =
                            (index == first ? RecordFrame.startOfBatch : 0)
                            | (index == last ? RecordFrame.endOfBatch : 0)
                        let start = bytes.count
                        try Self.appendFrame(for: write, version: version, flags: flags, key: key, to: &bytes)
                        group.writes[position].offset = start
                        group.writes[position].length = bytes.count - start
                        position += 1
                    }
                case .relocations(let frames):
                    for frame in frames {
                        group.writes[position].offset = bytes.count
                        bytes.append(contentsOf: frame)
                        position += 1
                    }
                }
            }
        } catch {
            let cause = "cannot seal a record: \(error)"
            fail(group, cause: cause)
            return false
        }
        group.bytes = bytes
        return true
    }

    /// Appends the frame of one write: a put's value sealed under `key`, or a delete.
    private static func appendFrame(
        for write: RecordWrite, version: UInt64, flags: UInt8, key: (version: UInt32, key: SymmetricKey),
        to bytes: inout [UInt8]
    ) throws {
        switch write {
        case .put(let collection, let id, let value, _):
            try withBytes(collection) { collectionBytes in
                try withBytes(id) { idBytes in
                    try value.withUnsafeBytes { valueBytes in
                        try RecordFrame.appendPut(
                            to: &bytes, flags: flags, collection: collectionBytes, id: idBytes, keyVersion: key.version,
                            recordVersion: version, value: valueBytes, key: key.key)
                    }
                }
            }
        case .delete(let collection, let id, _):
            withBytes(collection) { collectionBytes in
                withBytes(id) { idBytes in
                    RecordFrame.append(
                        to: &bytes, kind: .delete, flags: flags, collection: collectionBytes, id: idBytes,
                        keyVersion: 0,
                        recordVersion: version, sealed: UnsafeRawBufferPointer(start: nil, count: 0))
                }
            }
        }
    }

    /// Appends the group and syncs it, then acknowledges its writers and updates the index.
    /// - Returns: the number of callers that queued while the group was written, or nil if it
    ///   wrote nothing or failed.
    private func flush(_ group: Group) -> Int? {
        if group.writes.isEmpty {
            for (waiter, versions) in group.waiters { waiter.resume(returning: versions) }
            return nil
        }
        let (active, size, allocatedBefore, waiting) = state.withLock {
            ($0.active, $0.activeSize, $0.activeAllocated, $0.unindexed != nil)
        }
        var segment = active
        var offset = size
        var allocated = allocatedBefore
        let end: UInt64
        do {
            if size > UInt64(Self.segmentHeaderSize) && size + UInt64(group.bytes.count) > UInt64(options.segmentBytes)
            {
                segment = try rollSegment(after: active, logEnd: size)
                offset = UInt64(Self.segmentHeaderSize)
                allocated = offset
            }
            end = offset + UInt64(group.bytes.count)
            try group.bytes.withUnsafeBytes { try segment.file.write($0, at: offset) }
            if end > allocated { allocated = preallocate(segment.file, from: end) }
            // A waiting index update runs on the indexer thread while this sync waits.
            if waiting && options.indexesWhileSyncing { indexerWake.signal() }
            let syncStarted = DispatchTime.now().uptimeNanoseconds
            try segment.file.sync()
            metrics.groupCommitted(
                records: group.writes.count, fsyncNanoseconds: DispatchTime.now().uptimeNanoseconds - syncStarted)
        } catch {
            fail(group, segment: segment, offset: offset, error: error)
            return nil
        }
        let queued = intake.withLock { intake in
            intake.failedAt = nil
            return intake.queue.count
        }
        let (checkpointDue, compactionDue) = state.withLock { state in
            // A large group's index update waits for the next sync (or the first reader of the
            // index), so that the writers' way back, which competes for the CPU, does not carry
            // it; the one before it is made first, in order.
            state.indexAnsweredGroup()
            if state.active !== segment {
                state.active = segment
                state.segments[segment.number] = segment
            }
            state.activeSize = end
            state.activeAllocated = allocated
            state.segmentSizes[segment.number] = Int(end)
            state.durable = IndexCheckpoint.Position(segment: segment.number, offset: end)
            if group.writes.count >= options.deferIndexFromWrites {
                state.unindexed = UnindexedGroup(group: group, segment: segment.number, base: offset)
            } else {
                state.apply(group, segment: segment.number, base: offset)
            }
            state.bytesSinceCheckpoint += group.bytes.count
            state.changedSinceCheckpoint = true
            state.commitGroups += 1
            state.committedWaiters += group.waiters.count
            let checkpointDue =
                state.bytesSinceCheckpoint >= max(options.checkpointBytes, state.checkpointSize)
                && !state.checkpointScheduled
            if checkpointDue {
                state.checkpointScheduled = true
                state.automaticCheckpoints += 1
            }
            return (checkpointDue, compactionWanted(state))
        }
        // Answered once the state shows the group (so a writer's next read or condition sees its
        // write) and after the lock, so that a resumed writer that reads at once does not wait for
        // the flusher to finish answering the others.
        for (waiter, versions) in group.waiters { waiter.resume(returning: versions) }
        if checkpointDue {
            DispatchQueue.global().async { [self] in
                try? writeCheckpoint()
            }
        }
        if compactionDue { startAutomaticCompaction() }
        return queued
    }

    /// A write or sync failed: undo the partial append, refuse writes for a while, fail the
    /// group's writers and everything queued behind it.
    private func fail(_ group: Group, segment: Segment, offset: UInt64, error: any Error) {
        var undone = true
        do {
            try segment.file.truncate(to: offset)
            try segment.file.sync()
        } catch {
            undone = false
        }
        state.withLock { state in
            if segment !== state.active {
                state.active = segment
                state.segments[segment.number] = segment
                state.activeSize = offset
                state.segmentSizes[segment.number] = Int(offset)
            }
            state.activeAllocated = offset
            if !undone {
                // The tail may hold part of the failed group; never append after it.
                state.activeSize = UInt64(options.segmentBytes) + 1
            }
        }
        let text = (error as? FileSystemError)?.message ?? "\(error)"
        options.logger.error(
            "record store write failed; writes refused until it succeeds again", ["error": .string(text)])
        fail(group, cause: text)
    }

    /// The error writers get while writes are refused: `cause` is an OS error or a fixed text,
    /// never a value or a key.
    static func writesRefused(_ cause: String) -> StoreError {
        StoreError(.unavailable, "the store cannot write now (\(cause)); reads still work")
    }

    /// Refuses writes for `writeRetryInterval` (telling writers the `cause`), forgets the group's
    /// pending writes and fails its writers and everything queued.
    private func fail(_ group: Group, cause: String) {
        let error = Self.writesRefused(cause)
        state.withLock { state in
            // First the group answered before it: the failed group's pending writes may hide its.
            state.indexAnsweredGroup()
            state.forget(group)
        }
        let queued = intake.withLock { intake -> [QueuedWork] in
            intake.failedAt = options.clock.now
            intake.failureText = cause
            defer { intake.queue.removeAll() }
            return intake.queue
        }
        for (waiter, _) in group.waiters { waiter.resume(throwing: error) }
        for work in queued { work.waiter.resume(throwing: error) }
    }

    /// Zeros the file from `end` on, `preallocationBytes` ahead (never past the segment size
    /// unless the group itself is bigger); returns the new file size.
    ///
    /// Only a speed-up: when the zeros do not fit (a nearly full disk), the file is cut back to
    /// `end` and appends go on without them, their syncs also writing the file's size. The
    /// returned offset is then where preallocation is tried again, `preallocationBytes` later,
    /// so that a nearly full disk costs one failed attempt per `preallocationBytes` of log.
    private func preallocate(_ file: any StorageFile, from end: UInt64) -> UInt64 {
        guard options.preallocationBytes > 0 else { return end }
        let limit = max(UInt64(options.segmentBytes), end)
        let target = min((end + UInt64(options.preallocationBytes) + 4095) / 4096 * 4096, limit)
        var position = end
        do {
            while position < target {
                let count = Int(min(UInt64(Self.zeros.count), target - position))
                try Self.zeros.withUnsafeBytes {
                    try file.write(UnsafeRawBufferPointer(rebasing: $0[0..<count]), at: position)
                }
                position += UInt64(count)
            }
        } catch {
            try? file.truncate(to: end)
            let text = (error as? FileSystemError)?.message ?? "\(error)"
            options.logger.warning(
                "record store could not preallocate its segment; appending without it", ["error": .string(text)])
            return target
        }
        return max(target, end)
    }

    private static let zeros = [UInt8](repeating: 0, count: 1 << 20)

    /// Starts the next segment; the full one loses its preallocated tail.
    private func rollSegment(after active: Segment, logEnd: UInt64) throws -> Segment {
        try? active.file.truncate(to: logEnd)
        let number = active.number + 1
        let file = try fileSystem.openFile(segmentPath(number), create: true)
        try Self.writeSegmentHeader(file, number: number)
        try fileSystem.syncDirectory(segmentsDirectory)
        return Segment(number: number, file: file)
    }

    // MARK: Closing

    /// Flushes what is waiting, writes a checkpoint and releases the lock. Idempotent.
    public func close() {
        let alreadyClosing = intake.withLock { intake -> Bool in
            defer { intake.closing = true }
            return intake.closing
        }
        guard !alreadyClosing else { return }
        wake.signal()
        flusherDone.wait()
        indexerWake.signal()
        indexerDone.wait()
        // A cleanly closed store keeps no preallocated space.
        let (active, size, allocated) = state.withLock { ($0.active, $0.activeSize, $0.activeAllocated) }
        if size < allocated, (try? active.file.truncate(to: size)) != nil { try? active.file.sync() }
        try? writeCheckpoint(closing: true)
        // No more seals from the flusher: the keyring keeps the exact counts (a crash overcounts).
        do {
            try keyRing.releaseUnusedSeals()
        } catch {
            options.logger.warning("cannot write the exact seal counts", ["error": .string(String(describing: error))])
        }
        state.withLock { $0.closed = true }
        maintenance.withLock { _ in lock.release() }
    }

    // MARK: Status

    /// Whether writes are accepted now (false after a failed write, until one succeeds again).
    public var isWritable: Bool {
        intake.withLock { intake in
            guard let failedAt = intake.failedAt else { return !intake.closing }
            return options.clock.now.timeIntervalSince(failedAt) >= options.writeRetryInterval
        }
    }

    public var statistics: StoreStatistics {
        let failed = intake.withLock { $0.failedAt != nil }
        return withState { state in
            StoreStatistics(
                records: state.index.count, segments: state.segments.count,
                logBytes: state.segmentSizes.values.reduce(0, +),
                liveBytes: state.index.liveBytes.values.reduce(0, +),
                indexMemoryBytes: state.index.memoryBytes, isWritable: !failed,
                commitGroups: state.commitGroups, commits: state.committedWaiters,
                automaticCheckpoints: state.automaticCheckpoints, lastCheckpointBytes: state.checkpointSize)
        }
    }

    /// Per-client fingerprint keys from the keyring.
    public var fingerprintKeys: any FingerprintKeySource { keyRing.fingerprintKeys }
}
