import Foundation
import Synchronization
import Testing
import VaultCore
import VaultCrypto

@testable import VaultStore

/// Seal counting through the store: every sealed record counts, the key rotates online at the limit
/// and on age, and the counts come back after a reopen.
@Suite struct SealLimitTests {
    private func options(
        seals: UInt64, block: UInt64, age: TimeInterval? = nil, clock: any WallClock = ManualClock(),
        logger: Logger = .disabled
    ) -> FileStoreOptions {
        var options = testOptions(clock: clock, logger: logger)
        options.keyRotation = KeyRotationPolicy(maximumSeals: seals, maximumAge: age, reservationBlock: block)
        return options
    }

    @Test func writesRotateTheKeyAtTheSealLimitAndEveryRecordStillReads() async throws {
        let sandbox = try StoreSandbox()
        let logs = MemoryLogHandler()
        let store = try sandbox.open(options(seals: 5, block: 2, logger: Logger(handler: logs, minimumLevel: .debug)))
        for index in 0..<12 { try await store.put("cards", id: "c\(index)", value: Array("value \(index)".utf8)) }
        #expect(store.dataKeyStatus().map(\.key.version) == [1, 2, 3])
        #expect(store.dataKeyStatus().map(\.records) == [5, 5, 2])
        #expect(store.dataKeyStatus().map(\.key.seals) == [5, 5, 2])
        #expect(store.dataKeyStatus().map(\.isCurrent) == [false, false, true])
        // A batch is sealed under one version: four puts do not fit the three left, so they go to version 4.
        try await store.commit((0..<4).map { .put(collection: "cards", id: "b\($0)", value: [1], condition: .absent) })
        #expect(store.dataKeyStatus().map(\.key.seals) == [5, 5, 2, 4])
        for index in 0..<12 {
            #expect(try await store.get("cards", id: "c\(index)")?.value == Array("value \(index)".utf8))
        }
        // Each automatic rotation is logged with versions and counts, never key material.
        let rotations = logs.all.filter { $0.message == "data key rotated automatically" }
        #expect(rotations.count == 3)
        #expect(rotations.first?.metadata["reason"] == .string("seals"))
        #expect(rotations.first?.metadata["previousVersion"] == .int(1))
        #expect(rotations.first?.metadata["previousSeals"] == .int(5))
        #expect(rotations.first?.metadata["version"] == .int(2))
        let ring = String(decoding: fileBytes(sandbox.data + "/keyring.json"), as: UTF8.self)
        for line in logs.renderedLines { #expect(!line.contains("wrapped")) }
        #expect(ring.contains("\"seals\""))
        store.close()
    }

    @Test func countsPersistAcrossReopenAndRewrapCountsItsSeals() async throws {
        let sandbox = try StoreSandbox()
        var store = try sandbox.open(options(seals: 100, block: 8))
        for index in 0..<10 { try await store.put("cards", id: "c\(index)", value: [UInt8(index)]) }
        #expect(store.dataKeyStatus().map(\.key.seals) == [10])
        store.close()
        // 10 used, 16 reserved while open; a clean close writes the exact count.
        store = try sandbox.open(options(seals: 100, block: 8))
        #expect(store.dataKeyStatus().map(\.key.seals) == [10])
        try store.rotateDataKey()
        let report = try await store.rewrap()
        #expect(report.moved == 10)
        #expect(store.dataKeyStatus().map(\.key.seals) == [10, 10])
        #expect(store.dataKeyStatus().map(\.records) == [0, 10])
        store.close()
    }

    @Test func rewrapUnderALimitSmallerThanItsChunkStaysWithinTheLimit() async throws {
        let sandbox = try StoreSandbox()
        let store = try sandbox.open(options(seals: 4, block: 4))
        for index in 0..<10 { try await store.put("cards", id: "c\(index)", value: [UInt8(index)]) }
        try store.rotateDataKey()
        let report = try await store.rewrap()
        #expect(report.failures.isEmpty)
        #expect(report.moved > 0)
        let status = store.dataKeyStatus()
        for key in status { #expect(key.key.seals <= 4, "version \(key.key.version): \(key.key.seals)") }
        #expect(report.remaining == 10 - (status.last?.records ?? 0))
        for index in 0..<10 { #expect(try await store.get("cards", id: "c\(index)")?.value == [UInt8(index)]) }
        store.close()
    }

    @Test func theCurrentKeyIsReplacedOnAgeAtTheNextWrite() async throws {
        let sandbox = try StoreSandbox()
        let clock = ManualClock()
        let store = try sandbox.open(options(seals: 1 << 30, block: 1 << 16, age: 90 * 86_400, clock: clock))
        try await store.put("cards", id: "a", value: [1])
        clock.advance(by: 91 * 86_400)
        // An idle store does not rotate by itself (reads do not seal) ...
        #expect(try await store.get("cards", id: "a")?.value == [1])
        #expect(store.keyRing.currentVersion == 1)
        // ... the next seal does, before it is made.
        try await store.put("cards", id: "b", value: [2])
        #expect(store.dataKeyStatus().map(\.records) == [1, 1])
        #expect(store.keyRing.currentVersion == 2)
        store.close()
    }

    @Test func concurrentWritersNeverSealPastTheLimitOfAVersion() async throws {
        let sandbox = try StoreSandbox()
        let store = try sandbox.open(options(seals: 40, block: 8))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<16 {
                group.addTask {
                    for index in 0..<25 {
                        try await store.put(
                            "cards", id: "w\(writer)-\(index)", value: Array("w\(writer)-\(index)".utf8))
                    }
                }
            }
            try await group.waitForAll()
        }
        let status = store.dataKeyStatus()
        #expect(status.map(\.records).reduce(0, +) == 400)
        for key in status {
            #expect(key.key.seals <= 40, "version \(key.key.version) sealed \(key.key.seals)")
            #expect(UInt64(key.records) <= key.key.seals)
        }
        #expect(status.count >= 10)
        for writer in 0..<16 {
            for index in 0..<25 {
                #expect(
                    try await store.get("cards", id: "w\(writer)-\(index)")?.value == Array("w\(writer)-\(index)".utf8))
            }
        }
        store.close()
    }

    @Test func aQueueLongerThanTheLimitSpansRotationsAndAnOversizedBatchIsRefused() async throws {
        let sandbox = try StoreSandbox()
        let store = try sandbox.open(options(seals: 3, block: 1))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<16 {
                group.addTask {
                    for index in 0..<10 {
                        try await store.put("cards", id: "w\(writer)-\(index)", value: [UInt8(index)])
                    }
                }
            }
            try await group.waitForAll()
        }
        let status = store.dataKeyStatus()
        #expect(status.map(\.records).reduce(0, +) == 160)
        for key in status { #expect(key.key.seals <= 3) }
        #expect(status.count >= 160 / 3)
        await #expect(throws: StoreError(.invalidArgument, "")) {
            try await store.commit(
                (0..<4).map { .put(collection: "cards", id: "big\($0)", value: [1], condition: .absent) })
        }
        #expect(try await store.get("cards", id: "big0") == nil)
        // The store keeps writing after the refusal.
        try await store.put("cards", id: "after", value: [9])
        #expect(try await store.get("cards", id: "after")?.value == [9])
        store.close()
    }

    @Test func keyMetricsNameVersionsSealsAndTheCurrentVersion() async throws {
        let sandbox = try StoreSandbox()
        let clock = ManualClock()
        let store = try sandbox.open(options(seals: 3, block: 1, age: 86_400 * 30, clock: clock))
        for index in 0..<4 { try await store.put("cards", id: "c\(index)", value: [1]) }
        clock.advance(by: 7200)
        let text = store.keyMetricsText()
        #expect(text.contains("cardvault_data_key_seals{version=\"1\",state=\"decrypt-only\"} 3\n"))
        #expect(text.contains("cardvault_data_key_seals{version=\"2\",state=\"current\"} 1\n"))
        #expect(text.contains("cardvault_data_key_records{version=\"1\"} 3\n"))
        #expect(text.contains("cardvault_data_key_age_seconds{version=\"2\"} 7200\n"))
        #expect(text.contains("cardvault_data_key_current_version 2\n"))
        #expect(text.contains("cardvault_data_key_seal_limit 3\n"))
        #expect(text.contains("cardvault_data_key_age_limit_seconds 2592000\n"))
        #expect(text.contains("# TYPE cardvault_data_key_seals gauge\n"))
        store.close()
    }
}
