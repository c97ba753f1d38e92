import Foundation
import Testing
import VaultCrypto
import VaultStore
import VaultStorePostgres

/// Seals are counted in the database in blocks reserved by each daemon: one reservation at a time, the next
/// block reserved ahead, so concurrent writes that use up a daemon's share do not each reserve a block.
@Suite struct PostgresSealReservationTests {
    @Test func concurrentWritesReserveOneBlockAtATime() async throws {
        let block: UInt64 = 1000
        let sandbox = try PostgresSandbox(options: {
            PostgresStoreOptions(
                uri: $0, poolSize: 4,
                keyRotation: KeyRotationPolicy(maximumSeals: 1 << 40, maximumAge: nil, reservationBlock: block))
        })
        let store = sandbox.store
        let rounds = 20
        let writers = 64
        for round in 0..<rounds {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        try await store.put("cards", id: "c\(round)-\(writer)", value: [1], condition: .absent)
                    }
                }
                try await group.waitForAll()
            }
        }
        // Counted in the database as another daemon sees it (this one still holds its unused share).
        let other = try sandbox.openAnother()
        let seals = other.store.keyRing.dataKeys.reduce(0) { $0 + $1.seals }
        let used = UInt64(rounds * writers)
        #expect(seals >= used, "every seal made is counted")
        // The blocks the seals needed, and at most one more reserved ahead.
        #expect(seals <= (used + block - 1) / block * block + block, "\(seals) seals reserved for \(used) made")
        #expect(other.store.keyRing.dataKeys.count == 1, "no rotation")
    }
}
