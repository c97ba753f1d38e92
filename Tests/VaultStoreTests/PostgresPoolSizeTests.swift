import Foundation
import Testing
import VaultCore
import VaultStore

@testable import VaultStorePostgres

/// The default pool is small (docs/operations.md, "Performance: the pool's size"), but a long piece of work on one
/// connection (a keyring session, a count of a large collection) still leaves reads and commits a connection.
@Suite struct PostgresPoolSizeTests {
    @Test func theDefaultPoolServesReadsAndCommitsBesideALongJob() async throws {
        let sandbox = try PostgresSandbox(options: { PostgresStoreOptions(uri: $0) })
        let store = sandbox.store.store
        let pool = store.pool
        #expect(store.options.poolSize == PostgresStoreOptions.defaultPoolSize)
        try await store.put("wallets", id: "w", value: [0], condition: .absent)

        let release = Locked(false)
        let long = Task {
            try await pool.session { _ in
                let deadline = Date().addingTimeInterval(30)
                while !release.withLock({ $0 }), Date() < deadline { usleep(1000) }
                return PostgresRows(rows: [], affected: 0)
            }
        }
        let deadline = Date().addingTimeInterval(10)
        while pool.metrics.snapshot.inUse == 0, Date() < deadline { try await Task.sleep(for: .milliseconds(2)) }
        let done = Locked(0)
        let traffic = Task {
            for round in 1...20 {
                let record = try await store.get("wallets", id: "w")
                #expect(record?.version == UInt64(round))
                try await store.put("wallets", id: "w", value: [UInt8(round)], condition: .version(UInt64(round)))
                done.withLock { $0 = round }
            }
        }
        while done.withLock({ $0 }) < 20, Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        let doneBeside = done.withLock { $0 }
        let longStillRunning = pool.metrics.snapshot.inUse >= 1
        release.withLock { $0 = true }
        _ = try await long.value
        try await traffic.value
        #expect(doneBeside == 20, "reads and commits went on while the long job held a connection")
        #expect(longStillRunning)
        #expect(try await store.get("wallets", id: "w")?.value == [20])
    }
}
