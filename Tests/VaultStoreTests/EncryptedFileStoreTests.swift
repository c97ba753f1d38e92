import Foundation
import Synchronization
import Testing
import VaultCore
import VaultCrypto

@testable import VaultStore

#if canImport(Glibc)
import Glibc
#endif

@Suite struct EncryptedFileStoreTests {
    private func value(_ id: String, _ version: UInt64 = 1) -> [UInt8] {
        Array("value of \(id) at \(version) ".utf8) + [UInt8](repeating: UInt8(version & 0xFF), count: 20)
    }

    @Test func recordsVersionsAndDeletesSurviveReopenWithAndWithoutCheckpoint() async throws {
        let sandbox = try StoreSandbox()
        var store = try sandbox.open(testOptions())
        for index in 0..<300 {
            try await store.put("cards", id: "card-\(index)", value: value("card-\(index)"))
        }
        try await store.put("cards", id: "card-7", value: value("card-7", 2), condition: .version(1))
        try await store.delete("cards", id: "card-8")
        try await store.put("users", id: "u-1", value: [1, 2, 3])
        store.close()

        // Reopen from the checkpoint written at close.
        store = try sandbox.open(testOptions())
        #expect(store.recovery.usedCheckpoint)
        #expect(store.recovery.framesReplayed == 0)
        try await expectContents(store)
        // More writes after the checkpoint, then a reopen that replays them.
        try await store.put("cards", id: "card-9", value: value("card-9", 2), condition: .version(1))
        try await store.delete("cards", id: "card-10")
        store.close()
        try FileManager.default.removeItem(atPath: sandbox.data + "/index.checkpoint")

        store = try sandbox.open(testOptions())
        #expect(!store.recovery.usedCheckpoint)
        #expect(store.recovery.tornTailBytes == 0)
        try await expectContents(store)
        #expect(try await store.get("cards", id: "card-9")?.value == value("card-9", 2))
        #expect(try await store.get("cards", id: "card-10") == nil)
        #expect(try await store.scanAll("cards").count == 298)
        store.close()
    }

    private func expectContents(_ store: EncryptedFileStore) async throws {
        #expect(
            try await store.get("cards", id: "card-0")
                == Record(collection: "cards", id: "card-0", version: 1, value: value("card-0")))
        #expect(try await store.get("cards", id: "card-7")?.version == 2)
        #expect(try await store.get("cards", id: "card-7")?.value == value("card-7", 2))
        #expect(try await store.get("cards", id: "card-8") == nil)
        #expect(try await store.get("users", id: "u-1")?.value == [1, 2, 3])
        let page = try await store.scan("cards", prefix: "card-29", after: nil, limit: 100)
        #expect(page.map(\.id) == ["card-29"] + (290..<300).map { "card-\($0)" })
    }

    @Test func checkpointPlusTailReplayMatchesAFullReplay() async throws {
        let sandbox = try StoreSandbox()
        let store = try sandbox.open(testOptions(segmentBytes: 16 << 10))
        for index in 0..<500 { try await store.put("a", id: "r\(index % 200)", value: value("r\(index)")) }
        try store.checkpoint()
        for index in 500..<700 { try await store.put("a", id: "r\(index % 250)", value: value("r\(index)")) }
        for index in 0..<50 { try await store.delete("a", id: "r\(index * 3)") }
        let expected = try await store.scanAll("a")
        // Simulate a crash: no close, so no final checkpoint; release only the lock by closing a copy.
        let checkpointCopy = fileBytes(sandbox.data + "/index.checkpoint")
        store.close()
        try Data(checkpointCopy).write(to: URL(fileURLWithPath: sandbox.data + "/index.checkpoint"))

        let fromCheckpoint = try sandbox.open(testOptions(segmentBytes: 16 << 10))
        #expect(fromCheckpoint.recovery.usedCheckpoint)
        #expect(fromCheckpoint.recovery.framesReplayed == 250)
        #expect(try await fromCheckpoint.scanAll("a") == expected)
        fromCheckpoint.close()

        try FileManager.default.removeItem(atPath: sandbox.data + "/index.checkpoint")
        let full = try sandbox.open(testOptions(segmentBytes: 16 << 10))
        #expect(!full.recovery.usedCheckpoint)
        #expect(try await full.scanAll("a") == expected)
        full.close()
    }

    /// A checkpoint is due after `checkpointBytes` of log, or after as much log as the last checkpoint holds when
    /// that is more: a large index is not rewritten for every few KiB of log. It is written in pieces, each synced,
    /// and reopens whole.
    @Test func theCheckpointIntervalGrowsWithTheCheckpointWrittenInPieces() async throws {
        let sandbox = try StoreSandbox()
        var options = testOptions(segmentBytes: 1 << 20, checkpointBytes: 4096)
        options.checkpointChunkBytes = 4096
        let payload = [UInt8](repeating: 2, count: 1000)
        /// Puts until the log's growth starts a checkpoint; returns the log bytes written.
        func writeUntilACheckpoint(_ store: EncryptedFileStore, prefix: String) async throws -> Int {
            let (start, checkpoints) = (store.statistics.logBytes, store.statistics.automaticCheckpoints)
            var count = 0
            while store.statistics.automaticCheckpoints == checkpoints {
                try await store.put("b", id: "\(prefix)-\(count)", value: payload)
                count += 1
                try #require(count < 5000)
            }
            return store.statistics.logBytes - start
        }

        // A small index: every `checkpointBytes` of log.
        var store = try sandbox.open(options)
        let first = try await writeUntilACheckpoint(store, prefix: "small")
        #expect(first >= 4096 && first < 4096 + 1200)
        // A large one (3,000 long ids, about 100 times `checkpointBytes`): after as much log as it holds.
        let writing = store
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<30 {
                group.addTask {
                    for number in 0..<100 {
                        let id = "record-\(writer)-\(number)-" + String(repeating: "i", count: 80)
                        try await writing.put("a", id: id, value: [UInt8(number)])
                    }
                }
            }
            try await group.waitForAll()
        }
        store.close()
        store = try sandbox.open(options)
        let size = store.statistics.lastCheckpointBytes
        #expect(size > 80 * 4096)
        let later = try await writeUntilACheckpoint(store, prefix: "large")
        #expect(later >= size && later < size + 1200)
        store.close()

        let reopened = try sandbox.open(options)
        #expect(reopened.recovery.usedCheckpoint && reopened.recovery.framesReplayed == 0)
        #expect(try await reopened.scanAll("a").count == 3000)
        #expect(try await reopened.get("a", id: "record-29-99-" + String(repeating: "i", count: 80))?.value == [99])
        #expect(try await reopened.scanAll("b").count == reopened.statistics.records - 3000)
        #expect(reopened.statistics.lastCheckpointBytes > size)
        reopened.close()
    }

    @Test func aDamagedCheckpointFallsBackToAFullReplay() async throws {
        let sandbox = try StoreSandbox()
        var store = try sandbox.open(testOptions())
        for index in 0..<50 { try await store.put("a", id: "r\(index)", value: value("r\(index)")) }
        store.close()
        let path = sandbox.data + "/index.checkpoint"
        var bytes = fileBytes(path)
        bytes[bytes.count / 2] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        store = try sandbox.open(testOptions())
        #expect(!store.recovery.usedCheckpoint)
        #expect(store.recovery.records == 50)
        store.close()
    }

    @Test func aTornTailIsCutOffAndEveryCompleteBatchKept() async throws {
        let sandbox = try StoreSandbox()
        var store = try sandbox.open(testOptions())
        for index in 0..<20 { try await store.put("a", id: "r\(index)", value: value("r\(index)")) }
        store.close()
        try FileManager.default.removeItem(atPath: sandbox.data + "/index.checkpoint")
        let segment = sandbox.segmentFiles().last!
        let goodSize = fileBytes(segment).count
        // A frame of a batch that never finished: the first 40 bytes of a real frame.
        let frame = Array(fileBytes(segment)[16..<56])
        try append(segment, frame)
        store = try sandbox.open(testOptions())
        #expect(store.recovery.tornTailBytes == 40)
        #expect(store.recovery.damage.isEmpty)
        #expect(fileBytes(segment).count == goodSize)
        #expect(store.recovery.records == 20)
        try await store.put("a", id: "after", value: [9])
        store.close()
        store = try sandbox.open(testOptions())
        #expect(try await store.get("a", id: "after")?.value == [9])
        #expect(try await store.get("a", id: "r19")?.value == value("r19"))
        store.close()
    }

    @Test func anUnfinishedBatchIsDroppedWhole() async throws {
        let sandbox = try StoreSandbox()
        var store = try sandbox.open(testOptions())
        try await store.commit([
            .put(collection: "a", id: "x", value: [1], condition: .absent),
            .put(collection: "a", id: "y", value: [2], condition: .absent),
        ])
        store.close()
        try FileManager.default.removeItem(atPath: sandbox.data + "/index.checkpoint")
        let segment = sandbox.segmentFiles().last!
        let bytes = fileBytes(segment)
        // Cut the last frame (y, which ends the batch) in half: x must go too.
        let firstLength = Int(bytes[16]) | Int(bytes[17]) << 8
        let cut = 16 + firstLength + 10
        try FileManager.default.removeItem(atPath: segment)
        try Data(bytes[0..<cut]).write(to: URL(fileURLWithPath: segment))
        store = try sandbox.open(testOptions())
        #expect(store.recovery.tornTailBytes == cut - 16)
        #expect(try await store.get("a", id: "x") == nil)
        #expect(try await store.get("a", id: "y") == nil)
        store.close()
    }

    @Test func aFlippedByteFailsThatRecordOnlyAndVerifyReportsIt() async throws {
        let sandbox = try StoreSandbox()
        var store = try sandbox.open(testOptions())
        for index in 0..<10 { try await store.put("cards", id: "c\(index)", value: value("c\(index)")) }
        let location = store.withState { $0.index[$0.index.find("cards", "c4")!].location }
        store.close()
        // Flip a byte inside c4's ciphertext (after header and names, before the tag).
        let segment = sandbox.segmentFiles().last!
        let target = Int(location.offset) + RecordFrame.fixedHeaderSize + 2 + 5 + AESGCM.nonceSize + 3
        var byte = fileBytes(segment)[target]
        byte ^= 0x01
        try patch(segment, at: target, with: [byte])

        store = try sandbox.open(testOptions())
        await #expect(throws: StoreError(.corrupted, "")) { try await store.get("cards", id: "c4") }
        for index in [0, 1, 2, 3, 5, 6, 7, 8, 9] {
            #expect(try await store.get("cards", id: "c\(index)")?.value == value("c\(index)"))
        }
        let report = try await store.verify()
        #expect(report.checked == 10)
        #expect(report.failures.map(\.id) == ["c4"])
        #expect(report.failures[0].reason.contains("authentication"))
        store.close()

        // Without the checkpoint, recovery sees the damaged frame in the middle and keeps going.
        try FileManager.default.removeItem(atPath: sandbox.data + "/index.checkpoint")
        store = try sandbox.open(testOptions())
        #expect(store.recovery.tornTailBytes == 0)
        #expect(store.recovery.corruptedRecords == 1)
        #expect(store.recovery.records == 10)
        #expect(try await store.verify().failures.map(\.id) == ["c4"])
        #expect(try await store.get("cards", id: "c9")?.value == value("c9"))
        store.close()
    }

    @Test func aDamagedFrameHeaderInTheMiddleIsReportedNotTruncated() async throws {
        let sandbox = try StoreSandbox()
        var store = try sandbox.open(testOptions())
        for index in 0..<10 { try await store.put("cards", id: "c\(index)", value: value("c\(index)")) }
        let location = store.withState { $0.index[$0.index.find("cards", "c3")!].location }
        store.close()
        try FileManager.default.removeItem(atPath: sandbox.data + "/index.checkpoint")
        let segment = sandbox.segmentFiles().last!
        try patch(segment, at: Int(location.offset), with: [0xFF, 0xFF])  // its length field
        store = try sandbox.open(testOptions())
        #expect(store.recovery.tornTailBytes == 0)
        #expect(store.recovery.damage.count == 1)
        #expect(try await store.get("cards", id: "c3") == nil)
        #expect(try await store.get("cards", id: "c9")?.value == value("c9"))
        #expect(try await store.verify().damage.count == 1)
        store.close()
    }

    @Test func aRecordCopiedOntoAnotherIdFailsAuthentication() async throws {
        let sandbox = try StoreSandbox()
        var store = try sandbox.open(testOptions())
        try await store.put("cards", id: "aa", value: value("aa"))
        try await store.put("cards", id: "bb", value: value("bb"))
        let (first, second) = store.withState {
            ($0.index[$0.index.find("cards", "aa")!].location, $0.index[$0.index.find("cards", "bb")!].location)
        }
        store.close()
        let segment = sandbox.segmentFiles().last!
        let bytes = fileBytes(segment)
        // Put aa's sealed value in bb's place (same sizes), with valid checksums.
        let namesEnd = RecordFrame.fixedHeaderSize + 5 + 2
        var swapped = Array(bytes[Int(second.offset)..<Int(second.offset + second.length)])
        swapped.replaceSubrange(
            namesEnd..<swapped.count - 4,
            with: bytes[Int(first.offset) + namesEnd..<Int(first.offset + first.length) - 4])
        RecordFrame.reflag(&swapped, flags: RecordFrame.endOfBatch)
        try patch(segment, at: Int(second.offset), with: swapped)
        store = try sandbox.open(testOptions())
        #expect(try await store.get("cards", id: "aa")?.value == value("aa"))
        await #expect(throws: StoreError(.corrupted, "")) { try await store.get("cards", id: "bb") }
        store.close()
    }

    @Test func filesAreOwnerOnlyAndASecondOpenerIsToldWhoHoldsTheLock() async throws {
        let sandbox = try StoreSandbox()
        let store = try sandbox.open(testOptions())
        try await store.put("a", id: "b", value: [1])
        try store.checkpoint()
        do {
            _ = try sandbox.open(testOptions())
            Issue.record("a second opener got the store")
        } catch let error as StoreError {
            #expect(error.code == .locked)
            #expect(error.message.contains("in use by another cardvault process (pid \(getpid()))"))
        }
        var status = stat()
        for path in sandbox.dataFiles() + [sandbox.keys + "/master.key"] {
            #expect(stat(path, &status) == 0)
            #expect(status.st_mode & 0o777 == 0o600, "\(path)")
        }
        for path in [sandbox.data, sandbox.data + "/segments", sandbox.keys] {
            #expect(stat(path, &status) == 0)
            #expect(status.st_mode & 0o777 == 0o700, "\(path)")
        }
        store.close()
        let again = try sandbox.open(testOptions())
        #expect(try await again.get("a", id: "b")?.value == [1])
        again.close()
    }

    /// The index update of the last group answered waits for the next sync; every reader of the
    /// index must still see that group at once, also when no further write comes.
    @Test func theLastGroupAnsweredIsSeenByEveryReaderOfTheIndex() async throws {
        let sandbox = try StoreSandbox()
        var options = testOptions()
        options.deferIndexFromWrites = 1  // every answered group's index update waits,
        options.indexesWhileSyncing = false  // for a reader or the next group
        let store = try sandbox.open(options)
        try await store.put("a", id: "kept", value: [1])
        try await store.put("a", id: "gone", value: [2])
        try await store.delete("a", id: "gone")
        #expect(store.state.withLock { $0.unindexed != nil })
        #expect(try await store.get("a", id: "gone") == nil)  // deleted by the group not indexed yet
        #expect(try await store.get("a", id: "kept")?.value == [1])
        // Reads by id find the group's writes among the pending ones, without making its index update.
        #expect(store.state.withLock { $0.unindexed != nil })
        #expect(try await store.scanAll("a").map(\.id) == ["kept"])
        #expect(store.state.withLock { $0.unindexed == nil })  // a scan made it

        try await store.put("a", id: "last", value: [3])
        #expect(try await store.get("a", id: "last").map { [$0.value, [UInt8($0.version)]] } == [[3], [1]])
        #expect(store.state.withLock { $0.unindexed != nil })
        #expect(store.statistics.records == 2)
        try await store.put("a", id: "last", value: [4])
        #expect(try await store.scanAll("a").map(\.id) == ["kept", "last"])
        try await store.put("a", id: "more", value: [5])
        #expect(try await store.count("a", prefix: "", after: nil, limit: 10) == 3)
        try await store.put("a", id: "more", value: [6])
        #expect(store.dataKeyStatus().map(\.records) == [3])
        // A rotation right after a write: the old key stays in use until that record is rewrapped.
        let rotated = try store.rotateDataKey()
        #expect(throws: KeyRingError.self) { try store.retireDataKey(version: rotated.version - 1) }
        _ = try await store.rewrap()
        try store.retireDataKey(version: rotated.version - 1)
        // A checkpoint right after a write holds it (recovery replays only what follows).
        try await store.put("a", id: "checkpointed", value: [7])
        try store.checkpoint()
        store.close()
        let reopened = try sandbox.open(testOptions())
        #expect(reopened.recovery.usedCheckpoint && reopened.recovery.framesReplayed == 0)
        try await reopened.put("a", id: "after", value: [8])  // and the indexer's way, on a store with it on
        try await reopened.put("a", id: "after", value: [9])
        #expect(try await reopened.get("a", id: "after")?.value == [9])
        try await reopened.delete("a", id: "after")
        #expect(try await reopened.get("a", id: "checkpointed")?.value == [7])
        #expect(try await reopened.get("a", id: "more")?.value == [6])
        #expect(try await reopened.scanAll("a").count == 4)
        reopened.close()
    }

    /// The indexer makes a large group's index update a slice at a time, releasing the lock between slices; reads by
    /// id see every write of the group whatever part of it is indexed.
    @Test func aGroupIndexedSliceBySliceReadsTheSameAtEveryStep() async throws {
        let sandbox = try StoreSandbox()
        var options = testOptions()
        options.deferIndexFromWrites = 1
        options.indexesWhileSyncing = false
        let store = try sandbox.open(options)
        for id in 0..<20 { try await store.put("s", id: "r\(id)", value: [0]) }
        try await store.put("t", id: "flush", value: [0])  // the puts above are indexed now
        // One group: ten updates, five deletes, three new records, and the same record twice.
        var writes: [RecordWrite] = (0..<10).map {
            .put(collection: "s", id: "r\($0)", value: [1], condition: .version(1))
        }
        writes += (10..<15).map { .delete(collection: "s", id: "r\($0)", condition: .version(1)) }
        writes += (20..<23).map { .put(collection: "s", id: "r\($0)", value: [2], condition: .absent) }
        writes.append(.put(collection: "s", id: "r0", value: [3], condition: .unconditional))
        _ = try await store.commit(writes)
        func expectEveryRecordAsWritten() async throws {
            for id in 0..<23 {
                let record = try await store.get("s", id: "r\(id)")
                switch id {
                case 0: #expect(record?.value == [3] && record?.version == 3)
                case 1..<10: #expect(record?.value == [1] && record?.version == 2)
                case 10..<15: #expect(record == nil)
                case 15..<20: #expect(record?.value == [0] && record?.version == 1)
                default: #expect(record?.value == [2] && record?.version == 1)
                }
            }
        }
        var slices = 0
        while true {
            try await expectEveryRecordAsWritten()
            #expect(store.state.withLock { $0.unindexed != nil })
            slices += 1
            guard store.state.withLock({ $0.indexAnsweredGroup(limit: EncryptedFileStore.indexSlice) }) else { break }
        }
        #expect(slices == 3)  // 19 writes, 8 per slice
        #expect(store.state.withLock { $0.unindexed == nil && $0.pending.isEmpty })
        try await expectEveryRecordAsWritten()
        #expect(try await store.scanAll("s").count == 18)
        store.close()
    }

    @Test func concurrentWritersShareFsyncsAndEveryAcknowledgedWriteIsThere() async throws {
        let sandbox = try StoreSandbox()
        let store = try sandbox.open(testOptions(segmentBytes: 256 << 10))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<64 {
                group.addTask {
                    for index in 0..<40 {
                        try await store.put("w", id: "w\(writer)-\(index)", value: Array("\(writer)/\(index)".utf8))
                    }
                    // Contended conditional updates on one shared record: each succeeds exactly once per version.
                    while true {
                        let current = try await store.get("w", id: "counter")
                        do {
                            try await store.put(
                                "w", id: "counter", value: [UInt8(writer)],
                                condition: current.map { .version($0.version) } ?? .absent)
                            break
                        } catch let error as StoreError where error.code == .conflict {
                            continue
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await store.get("w", id: "counter")?.version == 64)
        store.close()
        let reopened = try sandbox.open(testOptions(segmentBytes: 256 << 10))
        #expect(try await reopened.scanAll("w").count == 64 * 40 + 1)
        #expect(try await reopened.get("w", id: "w63-39")?.value == Array("63/39".utf8))
        #expect(try await reopened.get("w", id: "counter")?.version == 64)
        reopened.close()
    }

    /// The writers of one group are answered together after its sync: each must get its own
    /// versions, whatever its place in the group.
    @Test func everyWriterOfAGroupGetsItsOwnVersions() async throws {
        let sandbox = try StoreSandbox()
        let store = try sandbox.open(testOptions())
        let writers = 64
        for writer in 0..<writers {  // record w<n> at version n + 1
            let put = RecordWrite.put(
                collection: "v", id: "w\(writer)", value: [UInt8(writer)], condition: .unconditional)
            #expect(try await store.commit(Array(repeating: put, count: writer + 1)).last == UInt64(writer + 1))
        }
        for round in 0..<3 {
            let answers = try await withThrowingTaskGroup(of: (Int, [UInt64]).self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        let versions = try await store.commit([
                            .put(collection: "v", id: "w\(writer)", value: [UInt8(writer)], condition: .unconditional),
                            .delete(collection: "v", id: "absent\(writer)", condition: .unconditional),
                            .put(collection: "v", id: "r\(round)-\(writer)", value: [1], condition: .absent),
                        ])
                        return (writer, versions)
                    }
                }
                var answers: [Int: [UInt64]] = [:]
                for try await (writer, versions) in group { answers[writer] = versions }
                return answers
            }
            for writer in 0..<writers {
                #expect(answers[writer] == [UInt64(writer + 2 + round), 0, 1])
            }
        }
        #expect(store.statistics.commitGroups < store.statistics.commits)
        store.close()
    }

    /// Record keys hash their names in place a word at a time: names that differ only in where the
    /// collection ends, or in a tail shorter than a word, must not hash alike.
    @Test func recordKeysOfShiftedOrPaddedNamesHashApart() {
        typealias Key = EncryptedFileStore.RecordKey
        #expect(Key(collection: "ab", id: "c").hashValue != Key(collection: "a", id: "bc").hashValue)
        #expect(Key(collection: "ab", id: "c") != Key(collection: "a", id: "bc"))
        var hashes: Set<Int> = []
        for length in 0..<40 {
            let id = String(repeating: "x", count: length)
            hashes.insert(Key(collection: "cards", id: id).hashValue)
            #expect(Key(collection: "cards", id: id) == Key(collection: "cards", id: String(id)))
            #expect(Key(collection: "cards", id: id).hashValue == Key(collection: "cards", id: id + "").hashValue)
        }
        #expect(hashes.count == 40)
        let long = "client-0001:card_000000000000000"
        #expect(
            Key(collection: "card-numbers", id: long + "1").hashValue
                != Key(collection: "card-numbers", id: long + "2").hashValue)
    }

    @Test func compactionReclaimsSpaceKeepsEveryRecordAndSurvivesReopen() async throws {
        let sandbox = try StoreSandbox()
        let store = try sandbox.open(testOptions(segmentBytes: 32 << 10))
        for round in 0..<10 {
            for index in 0..<200 {
                try await store.put("a", id: "r\(index)", value: value("r\(index)", UInt64(round)))
            }
        }
        for index in 0..<50 { try await store.delete("a", id: "r\(index)") }
        let before = store.statistics
        let expected = try await store.scanAll("a")
        let report = try await store.compact()
        let after = store.statistics
        #expect(report.segmentsRemoved > 0)
        #expect(after.logBytes < before.logBytes / 3)
        #expect(sandbox.segmentFiles().count == after.segments)
        #expect(try await store.scanAll("a") == expected)
        try await store.put("a", id: "new", value: [7])
        store.close()
        for withCheckpoint in [true, false] {
            if !withCheckpoint { try FileManager.default.removeItem(atPath: sandbox.data + "/index.checkpoint") }
            let reopened = try sandbox.open(testOptions(segmentBytes: 32 << 10))
            #expect(
                try await reopened.scanAll("a") == [Record(collection: "a", id: "new", version: 1, value: [7])]
                    + expected)
            #expect(try await reopened.get("a", id: "r10") == nil)
            #expect(try await reopened.verify().failures.isEmpty)
            reopened.close()
        }
    }

    @Test func compactionRunsWhileWritersAndReadersGoOn() async throws {
        let sandbox = try StoreSandbox()
        let store = try sandbox.open(testOptions(segmentBytes: 16 << 10))
        for index in 0..<100 { try await store.put("a", id: "r\(index)", value: value("r\(index)", 1)) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for round in 2..<12 {
                    for index in 0..<100 {
                        try await store.put("a", id: "r\(index)", value: value("r\(index)", UInt64(round)))
                        let read = try await store.get("a", id: "r\((index + 50) % 100)")
                        #expect(read != nil)
                    }
                }
            }
            group.addTask {
                for _ in 0..<5 { try await store.compact() }
            }
            try await group.waitForAll()
        }
        for index in 0..<100 {
            let record = try await store.get("a", id: "r\(index)")
            #expect(record?.version == 11)
            #expect(record?.value == value("r\(index)", 11))
        }
        store.close()
        let reopened = try sandbox.open(testOptions(segmentBytes: 16 << 10))
        #expect(try await reopened.get("a", id: "r42")?.value == value("r42", 11))
        reopened.close()
    }

    /// Compaction walks the index in chunks with the lock free in between; records overwritten or
    /// deleted after their chunk was read are neither moved back to an old value nor brought back.
    @Test func compactionWalksTheIndexInChunksWhileRecordsChange() async throws {
        let sandbox = try StoreSandbox()
        let opened = Shared<EncryptedFileStore?>(nil)
        let latest = Shared<[String: [UInt8]]>([:])
        let chunks = Shared<[(segment: UInt32, entries: Range<Int>)]>([])
        var options = testOptions(segmentBytes: 8 << 10)
        options.compactionScanEntries = 32
        options.compactionScanned = { segment, entries in
            let firstPass = chunks.value.allSatisfy {
                $0.segment == segment && $0.entries.upperBound <= entries.lowerBound
            }
            chunks.update { $0.append((segment, entries)) }
            guard firstPass, let store = opened.value, !entries.isEmpty else { return }
            // Only in the first pass over the oldest segment. Entry n holds record rn (written in order
            // into a new store): overwrite the first record of the chunk just read and delete its third,
            // both already found there for moving.
            let overwritten = "r\(entries.lowerBound)"
            let deleted = "r\(entries.lowerBound + 2)"
            let newValue = value(overwritten, 100)
            do {
                try await store.put("a", id: overwritten, value: newValue)
                try await store.delete("a", id: deleted)
                latest.update {
                    $0[overwritten] = newValue
                    $0[deleted] = nil
                }
            } catch {
                Issue.record(error)
            }
        }
        let store = try sandbox.open(options)
        for index in 0..<240 {
            try await store.put("a", id: "r\(index)", value: value("r\(index)", 1))
            latest.update { $0["r\(index)"] = value("r\(index)", 1) }
        }
        for index in stride(from: 1, to: 240, by: 2) {
            try await store.put("a", id: "r\(index)", value: value("r\(index)", 2))
            latest.update { $0["r\(index)"] = value("r\(index)", 2) }
        }
        let inOldest = store.withState { state in
            let oldest = state.segments.keys.min()
            return ["r0", "r2", "r32", "r34"].allSatisfy { id in
                state.index.find("a", id).map { state.index[$0].location.segment } == oldest
            }
        }
        #expect(inOldest)
        let closedSegments = store.statistics.segments - 1
        #expect(closedSegments >= 3)
        opened.update { $0 = store }
        let report = try await store.compact()
        opened.update { $0 = nil }

        #expect(report.segmentsRemoved == closedSegments)
        let scanned = chunks.value
        #expect(Set(scanned.map(\.segment)).count == closedSegments)
        #expect(scanned.allSatisfy { $0.entries.count <= 32 })
        // Each pass over a segment goes through every entry in order, one chunk after the other.
        for (previous, next) in zip(scanned, scanned.dropFirst()) where previous.segment == next.segment {
            #expect(next.entries.lowerBound == previous.entries.upperBound || next.entries.lowerBound == 0)
        }
        #expect(scanned.first?.entries.lowerBound == 0)
        #expect(scanned.map(\.entries.upperBound).max() == 240)

        let expected = latest.value
        #expect(expected.count == 240 - 8)  // one delete per chunk of the first pass: r2, r34, ..., r226
        func expectLatest(_ store: EncryptedFileStore) async throws {
            for index in 0..<240 {
                #expect(try await store.get("a", id: "r\(index)")?.value == expected["r\(index)"])
            }
            #expect(try await store.scanAll("a").count == expected.count)
        }
        try await expectLatest(store)
        store.close()
        for withCheckpoint in [true, false] {
            if !withCheckpoint { try FileManager.default.removeItem(atPath: sandbox.data + "/index.checkpoint") }
            let reopened = try sandbox.open(testOptions(segmentBytes: 8 << 10))
            try await expectLatest(reopened)
            #expect(try await reopened.verify().failures.isEmpty)
            reopened.close()
        }
    }

    @Test func noTestPANAppearsInAnyFileOrLogInAnyEncoding() async throws {
        let sandbox = try StoreSandbox()
        let logs = MemoryLogHandler()
        let store = try sandbox.open(testOptions(logger: Logger(handler: logs, minimumLevel: .debug)))
        let pans = ["4970101122334455", "5017670000006700", "4111111111111111", "371449635398431"]
        for (index, pan) in pans.enumerated() {
            let json = "{\"pan\":\"\(pan)\",\"expiry\":\"1229\"}"
            try await store.put("cards", id: "card-\(index)", value: Array(json.utf8))
            try await store.put(
                "cards-utf16", id: "card-\(index)",
                value: pan.utf16.flatMap { unit -> [UInt8] in [UInt8(unit & 0xFF), 0] })
        }
        try store.rotateDataKey()
        _ = try await store.rewrap()
        try await store.compact()
        store.close()
        let files = sandbox.dataFiles()
        #expect(files.count >= 4)
        let logText = Array(logs.renderedLines.joined(separator: "\n").utf8)
        for pan in pans {
            for pattern in encodings(of: pan) {
                for path in files {
                    #expect(!contains(fileBytes(path), pattern), "a PAN encoding found in \(path)")
                }
                #expect(!contains(logText, pattern))
            }
        }
    }

    /// ASCII digits, UTF-16 in both byte orders, and packed BCD at both nibble alignments.
    private func encodings(of pan: String) -> [[UInt8]] {
        let digits = pan.utf8.map { $0 - 0x30 }
        let ascii = Array(pan.utf8)
        let utf16LE = ascii.flatMap { byte -> [UInt8] in [byte, 0] }
        let utf16BE = ascii.flatMap { byte -> [UInt8] in [0, byte] }
        func bcd(_ digits: [UInt8]) -> [UInt8] {
            stride(from: 0, to: digits.count - 1, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
        }
        return [ascii, utf16LE, utf16BE, bcd(digits), bcd(Array(digits.dropFirst()))]
    }

    private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return haystack.withUnsafeBytes { hay in
            needle.withUnsafeBytes { pattern in
                for start in 0...(hay.count - pattern.count) where hay[start] == pattern[0] {
                    if memcmp(hay.baseAddress! + start, pattern.baseAddress!, pattern.count) == 0 { return true }
                }
                return false
            }
        }
    }
}
