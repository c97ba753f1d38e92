import Foundation
import Synchronization
import Testing
import VaultCrypto

@testable import VaultStore

@Suite struct KeyRotationUnderLoadTests {
    @Test func rotateThenRewrapWhileClientsWriteAndReadFailsNothingAndFreesTheOldVersion() async throws {
        let sandbox = try StoreSandbox()
        let store = try sandbox.open(testOptions(segmentBytes: 128 << 10))
        for index in 0..<500 { try await store.put("cards", id: "seed-\(index)", value: Array("seed \(index)".utf8)) }
        #expect(store.dataKeyStatus().map(\.records) == [500])

        let stop = Shared(false)
        let operations = Shared(0)
        let failures = Shared<[String]>([])
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<8 {
                group.addTask {
                    var index = 0
                    while !stop.value {
                        do {
                            let id = "w\(writer)-\(index)"
                            try await store.put("cards", id: id, value: Array(id.utf8), condition: .absent)
                            let seed = "seed-\((index * 7 + writer) % 500)"
                            let read = try await store.get("cards", id: seed)
                            if read?.value != Array("seed \(seed.dropFirst(5))".utf8) {
                                failures.update { $0.append("bad read \(seed)") }
                            }
                            if index % 5 == 0 {
                                // Updates of records rewrap is moving at the same time.
                                let current = try await store.get("cards", id: seed)!
                                try await store.put(
                                    "cards", id: seed, value: current.value, condition: .version(current.version))
                            }
                            operations.update { $0 += 1 }
                        } catch let error as StoreError where error.code == .conflict {
                            // Another writer updated the same seed first: a normal outcome, retried next round.
                        } catch {
                            failures.update { $0.append("\(error)") }
                        }
                        index += 1
                    }
                }
            }
            group.addTask {
                try await Task.sleep(for: .milliseconds(100))
                let rotated = try store.rotateDataKey()
                #expect(rotated.version == 2)
                try await Task.sleep(for: .milliseconds(50))
                let report = try await store.rewrap()
                #expect(report.failures.isEmpty)
                #expect(report.remaining == 0)
                try await Task.sleep(for: .milliseconds(50))
                stop.update { $0 = true }
            }
            try await group.waitForAll()
        }
        #expect(failures.value.isEmpty)
        #expect(operations.value > 50)
        let status = store.dataKeyStatus()
        #expect(status.map(\.key.version) == [1, 2])
        #expect(status[0].records == 0)
        #expect(status[1].records == store.statistics.records)
        try store.retireDataKey(version: 1)
        #expect(store.keyRing.key(version: 1) == nil)
        #expect(try await store.verify().failures.isEmpty)
        store.close()

        let reopened = try sandbox.open(testOptions(segmentBytes: 128 << 10))
        #expect(reopened.dataKeyStatus().map(\.key.retired) == [true, false])
        #expect(try await reopened.verify().failures.isEmpty)
        reopened.close()
    }

    @Test func retireIsRefusedWhileRecordsUseTheVersionAndForTheCurrentOne() async throws {
        let sandbox = try StoreSandbox()
        let store = try sandbox.open(testOptions())
        try await store.put("a", id: "x", value: [1])
        #expect(throws: KeyRingError(.versionInUse, "")) { try store.retireDataKey(version: 1) }
        try store.rotateDataKey()
        #expect(throws: KeyRingError(.versionInUse, "")) { try store.retireDataKey(version: 1) }
        #expect(throws: KeyRingError(.versionInUse, "")) { try store.retireDataKey(version: 2) }
        try await store.put("a", id: "y", value: [2])
        #expect(store.dataKeyStatus().map(\.records) == [1, 1])
        // Rewrap is idempotent: the second run has nothing left to move.
        #expect(try await store.rewrap().moved == 1)
        #expect(try await store.rewrap().moved == 0)
        try store.retireDataKey(version: 1)
        #expect(throws: KeyRingError(.unknownVersion, "")) { try store.retireDataKey(version: 1) }
        #expect(try await store.get("a", id: "x")?.value == [1])
        store.close()
    }

    @Test func masterRotationKeepsEveryRecordReadable() async throws {
        let sandbox = try StoreSandbox()
        var store = try sandbox.open(testOptions())
        try await store.put("a", id: "x", value: [1, 2])
        let before = fileBytes(sandbox.keys + "/master.key")
        try store.rotateMasterKey()
        #expect(fileBytes(sandbox.keys + "/master.key") != before)
        #expect(try await store.get("a", id: "x")?.value == [1, 2])
        store.close()
        store = try sandbox.open(testOptions())
        #expect(try await store.get("a", id: "x")?.value == [1, 2])
        store.close()
    }
}
