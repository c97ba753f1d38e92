import Foundation
import Synchronization
import VaultCore
public import VaultCrypto

/// What a compaction did.
public struct CompactionReport: Sendable, Equatable {
    public var segmentsRemoved = 0
    public var recordsMoved = 0
    public var bytesReclaimed = 0
}

/// What a rewrap did.
public struct RewrapReport: Sendable, Equatable {
    /// Records moved to the current data key.
    public var moved = 0
    /// Records that could not be read (damaged); they stay on their old key.
    public var failures: [VerifyFailure] = []
    /// Records still under an older key afterwards (0 when done).
    public var remaining = 0
}

extension EncryptedFileStore {
    /// A frame to append in place of a record's current one, if that is still `expected`.
    struct Relocation {
        var key: RecordKey
        var expected: RecordLocation
        var frame: [UInt8]
        var keyVersion: UInt32
    }

    // MARK: Checkpoints

    /// Writes the index checkpoint now (normally done every `checkpointBytes` of log and on close).
    public func checkpoint() throws {
        try writeCheckpoint(force: true)
    }

    func writeCheckpoint(force: Bool = false, closing: Bool = false) throws {
        try maintenance.withLock { _ in
            // After close the lock is released: nothing may be written any more.
            guard !state.withLock({ $0.closed }) else { return }
            defer { if closing { state.withLock { $0.closed = true } } }
            let (index, position, changed) = withState { state in
                defer {
                    state.changedSinceCheckpoint = false
                    state.bytesSinceCheckpoint = 0
                    state.checkpointScheduled = false
                }
                return (state.index, state.durable, state.changedSinceCheckpoint)
            }
            guard changed || force else { return }
            let encoder = IndexCheckpoint.Encoder(index, position: position)
            let path = (directory as NSString).appendingPathComponent(IndexCheckpoint.fileName)
            let temporary = path + ".tmp"
            do {
                let file = try fileSystem.openFile(temporary, create: true)
                try file.truncate(to: 0)
                // Blocks reserved first (a full disk fails here, before any writing), then the index in
                // pieces, each synced: one write and one sync of 100+ MB stalled the log's syncs for 130-240 ms.
                try file.allocate(UInt64(encoder.size))
                try file.sync()
                var offset: UInt64 = 0
                try encoder.write(chunkBytes: options.checkpointChunkBytes) { piece in
                    try file.write(piece, at: offset)
                    try file.sync()
                    offset += UInt64(piece.count)
                }
                try fileSystem.rename(temporary, to: path)
                try fileSystem.syncDirectory(directory)
                state.withLock { $0.checkpointSize = encoder.size }
            } catch {
                // A part-written checkpoint must not keep the space of a full disk.
                try? fileSystem.removeFile(temporary)
                state.withLock { $0.changedSinceCheckpoint = true }
                options.logger.warning("index checkpoint not written", ["error": .string("\(error)")])
                throw StoreError(.unavailable, "cannot write the index checkpoint: \(error)")
            }
        }
    }

    // MARK: Relocations

    /// Appends relocation frames for the records still at their expected place (others changed
    /// meanwhile and need no move), durably, through the same group commit as writes.
    func commitRelocations(_ relocations: [Relocation], requireCurrentKey: Bool) async throws {
        guard !relocations.isEmpty else { return }
        _ = try await awaitGroup { .relocations(relocations, requireCurrentKey: requireCurrentKey, $0) }
    }

    /// A complete single-frame batch for a record, from its names, versions and sealed bytes.
    static func frame(
        for key: RecordKey, keyVersion: UInt32, version: UInt64, sealed: UnsafeRawBufferPointer
    ) -> [UInt8] {
        var frame: [UInt8] = []
        frame.reserveCapacity(
            RecordFrame.fixedHeaderSize + key.collection.utf8.count + key.id.utf8.count + sealed.count + 4)
        withBytes(key.collection) { collection in
            withBytes(key.id) { id in
                RecordFrame.append(
                    to: &frame, kind: .put, flags: RecordFrame.startOfBatch | RecordFrame.endOfBatch,
                    collection: collection, id: id,
                    keyVersion: keyVersion, recordVersion: version, sealed: sealed)
            }
        }
        return frame
    }

    // MARK: Compaction

    /// Reclaims superseded and deleted records: moves the live records of every closed segment,
    /// oldest first, to the head of the log, writes one checkpoint, then removes the segments it
    /// emptied. Reads and writes go on meanwhile; a crash at any point leaves a readable store.
    @discardableResult
    public func compact() async throws -> CompactionReport {
        try await compact(onlyWhileWanted: false)
    }

    func compact(onlyWhileWanted: Bool) async throws -> CompactionReport {
        let started = compacting.withLock { running -> Bool in
            if running { return false }
            running = true
            return true
        }
        guard started else { return CompactionReport() }
        defer { compacting.withLock { $0 = false } }
        var report = CompactionReport()
        let targets = state.withLock { state in state.segments.keys.filter { $0 != state.active.number }.sorted() }
        // Segments emptied so far, removed together after one checkpoint (which no longer points into them): a
        // checkpoint per segment would write the whole index once per segment, and copy it in memory each time.
        var emptied: [UInt32] = []
        for number in targets {
            if onlyWhileWanted && !withState({ compactionWanted($0, ignoring: emptied) }) { break }
            let (moved, isEmpty) = try await emptySegment(number)
            report.recordsMoved += moved
            // Keep oldest-first order: never remove a segment while an older one remains.
            guard isEmpty else { break }
            emptied.append(number)
        }
        if !emptied.isEmpty {
            try writeCheckpoint(force: true)
            for number in emptied {
                guard let reclaimed = try removeEmptySegment(number) else { break }
                report.segmentsRemoved += 1
                report.bytesReclaimed += reclaimed
            }
        }
        if report.segmentsRemoved > 0 {
            metrics.compacted(report)
            options.logger.info(
                "record store compacted",
                [
                    "segments": .int(report.segmentsRemoved), "moved": .int(report.recordsMoved),
                    "reclaimedBytes": .int(report.bytesReclaimed),
                ])
        }
        return report
    }

    /// Whether automatic compaction should go on; the `ignoring` segments (emptied, not removed yet) count as
    /// gone.
    func compactionWanted(_ state: State, ignoring emptied: [UInt32] = []) -> Bool {
        guard options.automaticCompaction, state.segments.count - emptied.count > 1 else { return false }
        let total = state.segmentSizes.values.reduce(0, +) - emptied.reduce(0) { $0 + (state.segmentSizes[$1] ?? 0) }
        guard total >= options.compactionMinimumBytes, total > 0 else { return false }
        let live = state.index.liveBytes.values.reduce(0, +)
        return Double(total - live) / Double(total) >= options.compactionGarbageRatio
    }

    func startAutomaticCompaction() {
        let running = compacting.withLock { $0 }
        guard !running else { return }
        Task.detached { [self] in
            _ = try? await compact(onlyWhileWanted: true)
        }
    }

    /// Moves every live record out of segment `number` (into the active segment).
    /// - Returns: records moved, and whether none is left in it.
    private func emptySegment(_ number: UInt32) async throws -> (Int, Bool) {
        var moved = 0
        for _ in 0..<4 {
            guard let live = await liveRecords(in: number) else { return (moved, false) }
            let (candidates, segment) = live
            if candidates.isEmpty { break }
            var start = 0
            while start < candidates.count {
                let chunk = candidates[start..<min(start + 256, candidates.count)]
                start += 256
                var relocations: [Relocation] = []
                for (key, location) in chunk {
                    if options.valueUpgrade != nil, let upgraded = try upgradedRelocation(key, location, in: segment) {
                        relocations.append(upgraded)
                        continue
                    }
                    let bytes = try segment.file.read(count: Int(location.length), at: UInt64(location.offset))
                    let namesEnd = RecordFrame.fixedHeaderSize + key.collection.utf8.count + key.id.utf8.count
                    let sealedEnd = bytes.count - RecordFrame.trailerSize
                    guard bytes.count == Int(location.length), namesEnd <= sealedEnd else { continue }
                    let frame = bytes.withUnsafeBytes { raw in
                        Self.frame(
                            for: key, keyVersion: location.keyVersion, version: location.version,
                            sealed: UnsafeRawBufferPointer(rebasing: raw[namesEnd..<sealedEnd]))
                    }
                    relocations.append(
                        Relocation(key: key, expected: location, frame: frame, keyVersion: location.keyVersion))
                }
                try await commitRelocations(relocations, requireCurrentKey: false)
                moved += relocations.count
            }
        }
        return (moved, withState { Self.holdsNothingLive(number, $0) })
    }

    /// Whether `number` is a closed segment of the store with no live record left in it.
    private static func holdsNothingLive(_ number: UInt32, _ state: State) -> Bool {
        state.segments[number] != nil && (state.index.liveBytes[number] ?? 0) == 0 && state.active.number != number
    }

    /// Removes segment `number` if it still holds no live record. Call it after a checkpoint written once the
    /// segment was emptied, so that the checkpoint points into it no more.
    /// - Returns: the bytes reclaimed, or nil if the segment had to stay.
    private func removeEmptySegment(_ number: UInt32) throws -> Int? {
        try maintenance.withLock { _ -> Int? in
            let size = withState { state -> Int? in
                guard !state.closed, Self.holdsNothingLive(number, state) else { return nil }
                state.segments[number] = nil
                return state.segmentSizes.removeValue(forKey: number) ?? 0
            }
            guard let size else { return nil }
            try fileSystem.removeFile(segmentPath(number))
            try fileSystem.syncDirectory(segmentsDirectory)
            return size
        }
    }

    /// The live records of segment `number` with their locations, in index order, and the segment
    /// (nil once it is gone).
    ///
    /// The index is walked in chunks of ``FileStoreOptions/compactionScanEntries`` entries, the
    /// state lock released between them, so reads and commits never wait for a walk of the whole
    /// index. Records that change meanwhile are safe: a relocation applies only while its record
    /// is still at the location found here and has no write pending (`plan` checks both at commit
    /// time), so a record overwritten or deleted after its chunk is skipped. Nothing enters the
    /// segment meanwhile: writes and relocations go to the active segment, never to this closed
    /// one, and a record takes another entry only when deleted and written again. What changes
    /// while the records are moved, the next pass of `emptySegment` finds.
    private func liveRecords(in number: UInt32) async -> ([(RecordKey, RecordLocation)], Segment)? {
        let chunkSize = max(1, options.compactionScanEntries)
        var found: [(RecordKey, RecordLocation)] = []
        var start = 0
        while true {
            let range = start..<start + chunkSize
            let (segment, entryCount) = withState { state -> (Segment?, Int) in
                for entry in state.index.liveEntries(in: range) where state.index[entry].location.segment == number {
                    found.append(
                        (
                            RecordKey(collection: state.index.collectionName(of: entry), id: state.index.id(of: entry)),
                            state.index[entry].location
                        ))
                }
                return (state.segments[number], state.index.entries.count)
            }
            guard let segment else { return nil }
            await options.compactionScanned?(number, range.clamped(to: 0..<entryCount))
            start = range.upperBound
            if start >= entryCount { return (found, segment) }
        }
    }

    /// A relocation that carries a record's value in the current format (``FileStoreOptions/valueUpgrade``),
    /// sealed again under the current data key at the same record version; nil when the value needs no upgrade
    /// (or cannot be read: the frame is then moved as it is, and reads report the damage).
    private func upgradedRelocation(
        _ key: RecordKey, _ location: RecordLocation, in segment: Segment
    ) throws -> Relocation? {
        guard let upgrade = options.valueUpgrade,
            let value = try? open(key.collection, key.id, location, in: segment),
            let upgraded = upgrade(key.collection, value)
        else { return nil }
        let reservation = try keyRing.reserveSeals(1)
        if let rotation = reservation.rotation { logAutomaticRotation(rotation) }
        let sealed = try sealed(
            upgraded, for: key, keyVersion: reservation.version, key: reservation.key, version: location.version)
        return Relocation(key: key, expected: location, frame: sealed, keyVersion: reservation.version)
    }

    /// A complete frame for `value` of record `key` at `version`, sealed under `key`.
    private func sealed(
        _ value: [UInt8], for recordKey: RecordKey, keyVersion: UInt32, key: SymmetricKey, version: UInt64
    ) throws -> [UInt8] {
        let aad = withBytes(recordKey.collection) { collection in
            withBytes(recordKey.id) { id in
                RecordFrame.authenticatedData(
                    kind: .put, collection: collection, id: id, keyVersion: keyVersion, recordVersion: version)
            }
        }
        let sealed = try AESGCM.seal(value, using: key, authenticating: aad)
        return sealed.withUnsafeBytes {
            Self.frame(for: recordKey, keyVersion: keyVersion, version: version, sealed: $0)
        }
    }

    // MARK: Verify

    /// Reads and authenticates every record; reports those that fail (never their values).
    public func verify(progress: (@Sendable (Int, Int) -> Void)? = nil) async throws -> VerifyReport {
        let (total, damage) = withState { ($0.index.count, $0.recoveryDamage) }
        var report = VerifyReport(checked: 0, failures: [], damage: damage)
        var start = 0
        while true {
            let (chunk, more) = try withState { state -> ([(RecordKey, RecordLocation, Bool, Segment?)], Bool) in
                guard !state.closed else { throw StoreError(.closed, "the store is closed") }
                let entries = state.index.liveEntries(in: start..<start + 1024)
                return (
                    entries.map { entry in
                        let item = state.index[entry]
                        return (
                            RecordKey(collection: state.index.collectionName(of: entry), id: state.index.id(of: entry)),
                            item.location, item.flags & RecordIndex.corrupted != 0,
                            state.segments[item.location.segment]
                        )
                    }, start + 1024 < state.index.entries.count
                )
            }
            for (key, location, corrupted, segment) in chunk {
                report.checked += 1
                if corrupted || segment == nil {
                    report.failures.append(
                        VerifyFailure(
                            collection: key.collection, id: key.id,
                            reason: "damaged on disk (a checksum mismatch, or failed authentication when last read)"))
                    continue
                }
                do {
                    _ = try open(key.collection, key.id, location, in: segment!)
                } catch let error as StoreError {
                    report.failures.append(VerifyFailure(collection: key.collection, id: key.id, reason: error.message))
                    // Kept in the index (and its checkpoint): the next start-up counts it, reads fail at once.
                    if error.code == .corrupted { markDamaged(key.collection, key.id, at: location) }
                }
            }
            progress?(report.checked, total)
            start += 1024
            if !more { break }
        }
        return report
    }

    // MARK: Keys

    /// Every data key version with the number of records sealed under it.
    public func dataKeyStatus() -> [DataKeyStatus] {
        let current = keyRing.currentVersion
        let counts = withState { $0.index.keyVersionCounts }
        return keyRing.dataKeys.map { info in
            DataKeyStatus(key: info, records: counts[info.version] ?? 0, isCurrent: info.version == current)
        }
    }

    /// Prometheus text (exposition 0.0.4) about the data keys: seals, records and age per version,
    /// the current version and the limits. Labels are version numbers and states only.
    public func keyMetricsText() -> String {
        let status = dataKeyStatus()
        let policy = keyRing.policy
        let now = options.clock.now
        var text = "# HELP cardvault_data_key_seals AES-GCM seals made under each data key version (upper bound).\n"
        text += "# TYPE cardvault_data_key_seals gauge\n"
        for key in status {
            let state = key.key.retired ? "retired" : key.isCurrent ? "current" : "decrypt-only"
            text += "cardvault_data_key_seals{version=\"\(key.key.version)\",state=\"\(state)\"} \(key.key.seals)\n"
        }
        text += "# HELP cardvault_data_key_records Live records sealed under each data key version.\n"
        text += "# TYPE cardvault_data_key_records gauge\n"
        for key in status { text += "cardvault_data_key_records{version=\"\(key.key.version)\"} \(key.records)\n" }
        text += "# HELP cardvault_data_key_age_seconds Age of each data key version.\n"
        text += "# TYPE cardvault_data_key_age_seconds gauge\n"
        for key in status {
            let age = Int64(max(0, now.timeIntervalSince(key.key.created)))
            text += "cardvault_data_key_age_seconds{version=\"\(key.key.version)\"} \(age)\n"
        }
        text += "# HELP cardvault_data_key_current_version The data key version new records are sealed under.\n"
        text += "# TYPE cardvault_data_key_current_version gauge\n"
        text += "cardvault_data_key_current_version \(keyRing.currentVersion)\n"
        text += "# HELP cardvault_data_key_versions_in_use Data key versions that seal at least one live record.\n"
        text += "# TYPE cardvault_data_key_versions_in_use gauge\n"
        text += "cardvault_data_key_versions_in_use \(status.filter { $0.records > 0 }.count)\n"
        text += "# HELP cardvault_data_key_seal_limit Seals after which the current data key is rotated.\n"
        text += "# TYPE cardvault_data_key_seal_limit gauge\n"
        text += "cardvault_data_key_seal_limit \(policy.maximumSeals)\n"
        if let age = policy.maximumAge {
            text += "# HELP cardvault_data_key_age_limit_seconds Age after which the current data key is rotated.\n"
            text += "# TYPE cardvault_data_key_age_limit_seconds gauge\n"
            text += "cardvault_data_key_age_limit_seconds \(Int64(age))\n"
        }
        return text
    }

    /// Logs a rotation the keyring made by itself while seals were reserved (versions and counts only).
    func logAutomaticRotation(_ rotation: AutomaticRotation) {
        options.logger.notice(
            "data key rotated automatically",
            [
                "reason": .string(rotation.reason.rawValue), "previousVersion": .int(Int(rotation.previous.version)),
                "previousSeals": .int(Int(rotation.previous.seals)),
                "previousAgeDays": .int(
                    Int(rotation.next.created.timeIntervalSince(rotation.previous.created) / 86_400)),
                "version": .int(Int(rotation.next.version)),
                "sealLimit": .int(Int(keyRing.policy.maximumSeals)),
            ])
    }

    /// Adds a data key version; writes use it from the next one on.
    @discardableResult
    public func rotateDataKey() throws -> DataKeyInfo {
        let info = try keyRing.rotate()
        options.logger.notice("data key rotated", ["version": .int(Int(info.version))])
        return info
    }

    /// Re-wraps every data key under a new master key (records are untouched): `replacement` (shares, an HSM),
    /// or a fresh key file when nil (development custody). No old key stays on disk.
    public func rotateMasterKey(to replacement: (any KeyEncryptionKey)? = nil) throws {
        try keyRing.rotateMaster(to: replacement)
        options.logger.notice("master key rotated")
    }

    /// Drops a data key version, refused while any record (or write in flight) uses it, and for the current
    /// version (new writes use it: rotate first).
    public func retireDataKey(version: UInt32) throws {
        guard version != keyRing.currentVersion else {
            throw KeyRingError(
                .versionInUse,
                "data key version \(version) is the current one (new writes use it): run `cardvault keys rotate` first, "
                    + "then `cardvault keys rewrap`")
        }
        try withState { state in
            let inUse = (state.index.keyVersionCounts[version] ?? 0) + (state.inFlightKeyVersions[version] ?? 0)
            guard inUse == 0 else {
                throw KeyRingError(
                    .versionInUse,
                    "\(inUse) records still use data key version \(version); run `cardvault keys rewrap` first")
            }
            try keyRing.retire(version: version)
        }
        options.logger.notice("data key retired", ["version": .int(Int(version))])
    }

    /// Moves every record sealed under an older data key to the current one. Idempotent and
    /// resumable: it only moves what is not on the current key yet, so running it again after an
    /// interruption finishes the job. Writes and reads go on meanwhile.
    /// - Parameter progress: called with (records moved or checked, records to move).
    public func rewrap(progress: (@Sendable (Int, Int) -> Void)? = nil) async throws -> RewrapReport {
        var report = RewrapReport()
        var failed = Set<RecordKey>()
        for _ in 0..<8 {
            let current = keyRing.currentVersion
            let (toMove, entryCount) = withState { state in
                (state.index.count - (state.index.keyVersionCounts[current] ?? 0), state.index.entries.count)
            }
            if toMove - failed.count <= 0 { break }
            guard keyRing.currentVersion == current else { continue }
            var done = 0
            var start = 0
            while start < entryCount {
                let chunk = withState { state -> [(RecordKey, RecordLocation, Segment?)] in
                    state.index.liveEntries(in: start..<start + 512).compactMap { entry in
                        let item = state.index[entry]
                        guard item.location.keyVersion != current, item.flags & RecordIndex.corrupted == 0 else {
                            return nil
                        }
                        return (
                            RecordKey(collection: state.index.collectionName(of: entry), id: state.index.id(of: entry)),
                            item.location, state.segments[item.location.segment]
                        )
                    }
                }
                start += 512
                var relocations: [Relocation] = []
                let sealing = chunk.filter { !failed.contains($0.0) && $0.2 != nil }.count
                if sealing == 0 {
                    done += chunk.count
                    continue
                }
                // Counted like any other seal, reserved for the chunk (in parts of at most one key's
                // limit): may rotate on the way; the records then land on the newer key, and the next
                // pass moves whatever the rotation left behind.
                var unsealed = sealing
                var grant: (version: UInt32, key: SymmetricKey, left: Int)?
                for (recordKey, location, segment) in chunk where !failed.contains(recordKey) {
                    guard let segment else { continue }
                    if grant == nil || grant!.left == 0 {
                        let count = min(unsealed, Int(clamping: keyRing.policy.maximumSeals))
                        let reservation = try keyRing.reserveSeals(count)
                        if let rotation = reservation.rotation { logAutomaticRotation(rotation) }
                        grant = (reservation.version, reservation.key, count)
                    }
                    grant!.left -= 1
                    unsealed -= 1
                    let key = (version: grant!.version, key: grant!.key)
                    do {
                        var value = try open(recordKey.collection, recordKey.id, location, in: segment)
                        if let upgraded = options.valueUpgrade?(recordKey.collection, value) { value = upgraded }
                        let frame = try sealed(
                            value, for: recordKey, keyVersion: key.version, key: key.key, version: location.version)
                        relocations.append(
                            Relocation(key: recordKey, expected: location, frame: frame, keyVersion: key.version))
                    } catch let error as StoreError where error.code == .corrupted {
                        failed.insert(recordKey)
                        report.failures.append(
                            VerifyFailure(collection: recordKey.collection, id: recordKey.id, reason: error.message))
                    }
                }
                try await commitRelocations(relocations, requireCurrentKey: true)
                report.moved += relocations.count
                done += chunk.count
                progress?(min(done, toMove), toMove)
            }
        }
        let current = keyRing.currentVersion
        report.remaining = withState { state in
            state.index.count - (state.index.keyVersionCounts[current] ?? 0)
        }
        options.logger.notice("rewrap finished", ["moved": .int(report.moved), "remaining": .int(report.remaining)])
        return report
    }
}
