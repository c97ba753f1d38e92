import Foundation
import Synchronization
import Testing
import VaultCore
@testable import VaultStore

#if canImport(Glibc)
import Glibc
#endif

@Suite struct StoreFaultTests {
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
