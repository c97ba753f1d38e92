import Foundation
import Synchronization
import Testing
import VaultCore

@testable import VaultStore

#if canImport(Glibc)
import Glibc
#endif

@Suite struct StoreFaultTests {
    /// `segments/` is made durable in the data directory when the store opens, before the first
    /// record lands in it (not only at the first checkpoint's rename).
    @Test func openingSyncsTheSegmentsDirectoryIntoItsParent() async throws {
        let sandbox = try StoreSandbox()
        let files = FaultInjectingFileSystem()
        let store = try sandbox.open(testOptions(fileSystem: files))
        defer { store.close() }
        let synced = files.syncedDirectories.withLock { $0 }
        #expect(synced.first == sandbox.data)
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: sandbox.data + "/segments", isDirectory: &isDirectory))
        #expect(isDirectory.boolValue)
    }

    @Test(arguments: ["ENOSPC", "EIO"])
    func aFailedWriteErrsStaysReadableAndRefusesWritesUntilSpaceReturns(errorName: String) async throws {
        let code = errorName == "ENOSPC" ? ENOSPC : EIO
        let sandbox = try StoreSandbox()
        let files = FaultInjectingFileSystem()
        let clock = ManualClock()
        let store = try sandbox.open(testOptions(fileSystem: files, clock: clock, retry: 5))
        for index in 0..<10 { try await store.put("a", id: "r\(index)", value: [UInt8(index)]) }

        files.writeFailure.withLock { $0 = code }
        await #expect(throws: StoreError(.unavailable, "")) { try await store.put("a", id: "lost", value: [1]) }
        #expect(!store.isWritable)
        // Reads go on.
        #expect(try await store.get("a", id: "r3")?.value == [3])
        #expect(try await store.scanAll("a").count == 10)
        // Space returns, but writes stay refused until the retry interval passes (the daemon's 503s).
        files.writeFailure.withLock { $0 = nil }
        await #expect(throws: StoreError(.unavailable, "")) { try await store.put("a", id: "early", value: [1]) }
        clock.advance(by: 6)
        #expect(store.isWritable)
        try await store.put("a", id: "later", value: [2])
        #expect(try await store.get("a", id: "lost") == nil)
        store.close()

        // The half-written failed group left nothing behind.
        let reopened = try sandbox.open(testOptions())
        #expect(reopened.recovery.tornTailBytes == 0)
        #expect(try await reopened.get("a", id: "lost") == nil)
        #expect(try await reopened.get("a", id: "later")?.value == [2])
        #expect(try await reopened.scanAll("a").count == 11)
        reopened.close()
    }

    /// A disk with room for records but not for the zeros kept ahead of the log (4 MiB by
    /// default): writes go on without them; only a disk really full refuses writes.
    @Test func aDiskTooFullToPreallocateStillTakesWrites() async throws {
        let sandbox = try StoreSandbox()
        let files = FaultInjectingFileSystem()
        let limit: UInt64 = 256 << 10
        files.fileSizeLimit.withLock { $0 = limit }
        let clock = ManualClock()
        let store = try sandbox.open(
            FileStoreOptions(automaticCompaction: false, writeRetryInterval: 5, fileSystem: files, clock: clock))
        let value = [UInt8](repeating: 7, count: 100)
        for index in 0..<200 { try await store.put("a", id: "r\(index)", value: value) }
        #expect(store.isWritable)
        // The zeros that did not fit were cut off again: the segment holds the records.
        let segment = try #require(sandbox.segmentFiles().first)
        let size = try #require(FileManager.default.attributesOfItem(atPath: segment)[.size] as? Int)
        #expect(size < 200 * 300)

        // The disk fills up: the put that does not fit is refused, and everything else is readable.
        var acknowledged = 200
        var refusal: StoreError?
        while refusal == nil && acknowledged < 10_000 {
            do {
                try await store.put("a", id: "r\(acknowledged)", value: value)
                acknowledged += 1
            } catch let error as StoreError {
                refusal = error
            }
        }
        #expect(refusal?.code == .unavailable)
        #expect(acknowledged > 1000)  // 256 KiB holds well over a thousand 100-byte records
        #expect(try await store.get("a", id: "r\(acknowledged - 1)")?.value == value)

        // Space returns: after the retry interval, writes go on.
        files.fileSizeLimit.withLock { $0 = nil }
        clock.advance(by: 6)
        try await store.put("a", id: "after", value: [1])
        store.close()
        let reopened = try sandbox.open(testOptions())
        #expect(try await reopened.scanAll("a").count == acknowledged + 1)
        #expect(try await reopened.get("a", id: "r\(acknowledged)") == nil)
        reopened.close()
    }

    @Test func aCheckpointThatDoesNotFitLeavesNoPartFileBehind() async throws {
        let sandbox = try StoreSandbox()
        let files = FaultInjectingFileSystem()
        let store = try sandbox.open(testOptions(segmentBytes: 1 << 20, fileSystem: files))
        for index in 0..<300 { try await store.put("a", id: "record-\(index)", value: [1]) }
        files.fileSizeLimit.withLock { $0 = 4096 }
        #expect(throws: StoreError.self) { try store.checkpoint() }
        #expect(!sandbox.dataFiles().contains { $0.hasSuffix(".tmp") })
        files.fileSizeLimit.withLock { $0 = nil }
        try store.checkpoint()
        store.close()
        let reopened = try sandbox.open(testOptions())
        #expect(reopened.recovery.usedCheckpoint)
        #expect(try await reopened.scanAll("a").count == 300)
        reopened.close()
    }

    /// A group answered just before a failed one (its index update still waiting) keeps its
    /// versions: the failed group's write of the same record must not hide them.
    @Test func aFailedWriteOfARecordLeavesItsLastAnsweredVersionInForce() async throws {
        let sandbox = try StoreSandbox()
        let files = FaultInjectingFileSystem()
        var options = testOptions(fileSystem: files, retry: 0)
        options.deferIndexFromWrites = 1  // every answered group's index update waits,
        options.indexesWhileSyncing = false  // for a reader or the next group
        let store = try sandbox.open(options)
        for round in 0..<3 {
            let id = "r\(round)"
            let first = try await store.put("a", id: id, value: [1])
            files.syncFailure.withLock { $0 = EIO }
            await #expect(throws: StoreError.self) { try await store.put("a", id: id, value: [2]) }
            files.syncFailure.withLock { $0 = nil }
            let second = try await store.put("a", id: id, value: [3], condition: .version(first))
            #expect(second == first + 1)
            #expect(try await store.get("a", id: id)?.value == [3])
        }
        store.close()
    }

    @Test func aFailedSyncFailsEveryWriterOfTheGroupAndNothingOfItIsVisible() async throws {
        let sandbox = try StoreSandbox()
        let files = FaultInjectingFileSystem()
        let store = try sandbox.open(testOptions(fileSystem: files, retry: 0))
        try await store.put("a", id: "base", value: [0], condition: .absent)
        files.syncFailure.withLock { $0 = EIO }
        let failures = Shared(0)
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<16 {
                group.addTask {
                    do {
                        try await store.put("a", id: "w\(writer)", value: [1])
                    } catch let error as StoreError {
                        #expect(error.code == .unavailable)
                        failures.update { $0 += 1 }
                    } catch {
                        Issue.record("unexpected \(error)")
                    }
                }
            }
        }
        #expect(failures.value == 16)
        #expect(try await store.scanAll("a").map(\.id) == ["base"])
        files.syncFailure.withLock { $0 = nil }
        try await store.put("a", id: "w0", value: [2], condition: .absent)
        store.close()
        let reopened = try sandbox.open(testOptions())
        #expect(try await reopened.scanAll("a").map(\.id) == ["base", "w0"])
        reopened.close()
    }
}
