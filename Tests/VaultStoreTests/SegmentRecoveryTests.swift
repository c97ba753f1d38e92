import Foundation
import Synchronization
import Testing
import VaultCore
import VaultCrypto

@testable import VaultStore

#if canImport(Glibc)
import Glibc
#endif

/// Recovery with preallocated segment space, and damage that cuts a multi-write batch.
@Suite struct SegmentRecoveryTests {
    private func value(_ id: String) -> [UInt8] { Array("value of \(id)".utf8) }

    /// Writes `count` records r0, r1, … and closes the store without its checkpoint (so reopening
    /// replays the log); returns the last segment's path.
    private func closedWithRecords(_ count: Int, in sandbox: StoreSandbox) async throws -> String {
        let store = try sandbox.open(testOptions())
        for index in 0..<count { try await store.put("a", id: "r\(index)", value: value("r\(index)")) }
        store.close()
        try FileManager.default.removeItem(atPath: sandbox.data + "/index.checkpoint")
        return sandbox.segmentFiles().last!
    }

    /// Writes "before", then the ids of `batch` in one atomic commit, then each id of `after` alone.
    private func writeAroundABatch(_ store: EncryptedFileStore, batch: [String], after: [String]) async throws {
        try await store.put("a", id: "before", value: value("before"))
        try await store.commit(batch.map { .put(collection: "a", id: $0, value: value($0), condition: .absent) })
        for id in after { try await store.put("a", id: id, value: value(id)) }
    }

    /// Found while writing fuzz-store-recovery: a checkpoint (CRC intact) whose log offset is past the segment, inside
    /// its header, or at 2^63 or more made start-up trap converting it to Int, or scan from nonsense. Such a
    /// checkpoint is not used: the whole log is replayed.
    @Test func aCheckpointWhoseOffsetIsNotInsideItsSegmentIsNotUsed() async throws {
        let sandbox = try StoreSandbox()
        var store = try sandbox.open(testOptions())
        for index in 0..<5 { try await store.put("a", id: "r\(index)", value: value("r\(index)")) }
        store.close()
        let path = sandbox.data + "/" + IndexCheckpoint.fileName
        let (index, position) = try #require(IndexCheckpoint.decode(fileBytes(path)))
        let size = UInt64(fileBytes(try #require(sandbox.segmentFiles().last)).count)
        #expect(position.offset == size)
        for offset: UInt64 in [1 << 63, .max, size + 1, 0, UInt64(EncryptedFileStore.segmentHeaderSize) - 1] {
            try Data(IndexCheckpoint.encode(index, position: .init(segment: position.segment, offset: offset)))
                .write(to: URL(fileURLWithPath: path))
            store = try sandbox.open(testOptions())
            #expect(!store.recovery.usedCheckpoint, "offset \(offset)")
            #expect(store.recovery.records == 5)
            #expect(store.recovery.damage.isEmpty)
            #expect(try await store.get("a", id: "r4")?.value == value("r4"))
            store.close()
        }
        store = try sandbox.open(testOptions())
        #expect(store.recovery.usedCheckpoint)
        store.close()
    }

    @Test func theActiveSegmentIsPreallocatedWhileOpenAndExactAfterClose() async throws {
        let sandbox = try StoreSandbox()
        let store = try sandbox.open(testOptions(segmentBytes: 64 << 10))
        try await store.put("a", id: "one", value: value("one"))
        let segment = sandbox.segmentFiles().last!
        let (logical, allocated) = store.withState { ($0.activeSize, $0.activeAllocated) }
        #expect(allocated == 64 << 10)
        #expect(fileBytes(segment).count == Int(allocated))
        #expect(fileBytes(segment)[Int(logical)...].allSatisfy { $0 == 0 })
        store.close()
        #expect(fileBytes(segment).count == Int(logical))
    }

    @Test func zerosAfterTheLastBatchAreTheEndNotATornTail() async throws {
        let sandbox = try StoreSandbox()
        let segment = try await closedWithRecords(12, in: sandbox)
        let logical = fileBytes(segment).count
        // What a killed process leaves: preallocated zeros after the last group.
        try append(segment, [UInt8](repeating: 0, count: 20_000))
        var store = try sandbox.open(testOptions())
        #expect(store.recovery.tornTailBytes == 0)
        #expect(store.recovery.damage.isEmpty)
        #expect(store.recovery.records == 12)
        #expect(store.withState { $0.activeSize } == UInt64(logical))
        // Appends go where the log ends, into the preallocated space.
        try await store.put("a", id: "after", value: value("after"))
        store.close()
        store = try sandbox.open(testOptions())
        #expect(try await store.get("a", id: "after")?.value == value("after"))
        #expect(try await store.get("a", id: "r11")?.value == value("r11"))
        store.close()
    }

    @Test func anUnfinishedBatchBeforePreallocatedZerosIsTorn() async throws {
        let sandbox = try StoreSandbox()
        let segment = try await closedWithRecords(5, in: sandbox)
        let logical = fileBytes(segment).count
        let partialFrame = Array(fileBytes(segment)[16..<56])
        try append(segment, partialFrame + [UInt8](repeating: 0, count: 8_192))
        let store = try sandbox.open(testOptions())
        // The unfinished frame counts whole: its header says how long the write was.
        let frameLength = Int(partialFrame[0]) | Int(partialFrame[1]) << 8
        #expect(store.recovery.tornTailBytes == frameLength)
        #expect(store.recovery.damage.isEmpty)
        #expect(store.recovery.corruptedRecords == 0)
        #expect(store.recovery.records == 5)
        #expect(try await store.get("a", id: "r0")?.value == value("r0"))
        #expect(fileBytes(segment).count == logical)
        store.close()
    }

    @Test func damageInsideABatchDropsTheWholeBatchAndKeepsTheNextOnes() async throws {
        let sandbox = try StoreSandbox()
        var store = try sandbox.open(testOptions())
        try await writeAroundABatch(store, batch: ["x1", "x2", "x3"], after: ["after"])
        let middle = store.withState { $0.index[$0.index.find("a", "x2")!].location }
        store.close()
        try FileManager.default.removeItem(atPath: sandbox.data + "/index.checkpoint")
        let segment = sandbox.segmentFiles().last!
        try patch(segment, at: Int(middle.offset) + 4, with: [0x7F])  // x2's kind byte: not a frame
        store = try sandbox.open(testOptions())
        #expect(store.recovery.tornTailBytes == 0)
        #expect(store.recovery.damage.count == 2)  // the damaged range, and the frames dropped with it
        // x1 came before the damage and x3 after it: neither may stand without x2.
        for id in ["x1", "x2", "x3"] { #expect(try await store.get("a", id: id) == nil, "\(id)") }
        #expect(try await store.get("a", id: "before")?.value == value("before"))
        #expect(try await store.get("a", id: "after")?.value == value("after"))
        store.close()
    }

    @Test func damageInASegmentWrittenBeforeTheStartFlagLosesOnlyTheBatchItCuts() async throws {
        let sandbox = try StoreSandbox()
        var store = try sandbox.open(testOptions())
        try await writeAroundABatch(store, batch: ["x1", "x2"], after: ["after0", "after1", "after2"])
        let (damaged, frames) = store.withState { state in
            (
                state.index[state.index.find("a", "x1")!].location,
                ["before", "x1", "x2", "after0", "after1", "after2"].map {
                    state.index[state.index.find("a", $0)!].location
                }
            )
        }
        store.close()
        try FileManager.default.removeItem(atPath: sandbox.data + "/index.checkpoint")
        // Rewrite every frame as an earlier build wrote it: the end flag only, no start flag.
        let segment = sandbox.segmentFiles().last!
        var bytes = fileBytes(segment)
        for location in frames {
            let range = Int(location.offset)..<Int(location.offset) + Int(location.length)
            var frame = Array(bytes[range])
            RecordFrame.reflag(&frame, flags: frame[5] & RecordFrame.endOfBatch)
            bytes.replaceSubrange(range, with: frame)
        }
        bytes[Int(damaged.offset) + 4] = 0x7F  // x1's kind byte: not a frame
        try patch(segment, at: 0, with: bytes)
        store = try sandbox.open(testOptions())
        #expect(store.recovery.damage.count == 2)
        for id in ["x1", "x2"] { #expect(try await store.get("a", id: id) == nil, "\(id)") }
        for id in ["before", "after0", "after1", "after2"] {
            #expect(try await store.get("a", id: id)?.value == value(id), "\(id)")
        }
        store.close()
    }

    @Test func aFailedGroupWriteGivesBackItsPreallocatedSpaceAndWritesResume() async throws {
        let sandbox = try StoreSandbox()
        let files = FaultInjectingFileSystem()
        let store = try sandbox.open(testOptions(fileSystem: files, retry: 0))
        try await store.put("a", id: "one", value: value("one"))
        let logical = store.withState { $0.activeSize }
        files.writeFailure.withLock { $0 = ENOSPC }
        await #expect(throws: StoreError.self) { try await store.put("a", id: "two", value: value("two")) }
        #expect(store.withState { $0.activeAllocated } == logical)
        files.writeFailure.withLock { $0 = nil }
        try await store.put("a", id: "three", value: value("three"))
        #expect(try await store.get("a", id: "one")?.value == value("one"))
        #expect(try await store.get("a", id: "two") == nil)
        #expect(try await store.get("a", id: "three")?.value == value("three"))
        store.close()
    }
}
