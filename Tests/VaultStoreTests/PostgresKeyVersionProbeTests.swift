import Foundation
import Testing
import VaultCore
import VaultStore

@testable import VaultStorePostgres

/// The `/metrics` probe of the data key versions in use (every 5 s on each daemon) reads a few rows, not the whole
/// records table: schema version 3 has no index on `key_version`.
@Suite struct PostgresKeyVersionProbeTests {
    /// Rows of this schema's records table that `body` read by sequential scans on `connection`: counted by that
    /// session alone (`pg_stat_xact_user_tables`, which shows the session's counts not yet flushed, so they are
    /// flushed first), so the store's own sessions (its keyring watcher probes too, every 5 s) do not count, however
    /// their statistics are flushed.
    private func rowsScanned(on connection: PostgresConnection, _ body: () throws -> Void) throws -> Int {
        _ = try connection.execute("SELECT pg_stat_force_next_flush()")
        _ = try connection.execute("BEGIN")
        defer { _ = try? connection.execute("COMMIT") }
        try body()
        let rows = try connection.execute(
            "SELECT seq_tup_read FROM pg_stat_xact_user_tables "
                + "WHERE schemaname = current_schema() AND relname = 'cardvault_records'")
        return try #require(rows.text(0, 0).flatMap { Int($0) })
    }

    @Test func theProbeStopsAtEachVersionsFirstRecordAndSkipsAnEmptiedOldVersion() async throws {
        let sandbox = try PostgresSandbox()
        let store = sandbox.store.store
        let records = 2_000
        for batch in 0..<4 {
            let writes = (0..<records / 4).map { index in
                RecordWrite.put(
                    collection: "cards", id: "c\(batch)-\(index)", value: [UInt8(index & 0xFF)], condition: .absent)
            }
            _ = try await store.commit(writes)
        }
        _ = try await store.rotateDataKey()
        let moved = try await store.rewrap()
        #expect(moved.moved == records && moved.remaining == 0)

        let connection = try PostgresConnection(uri: sandbox.url, applicationName: "cardvault-probe-test")
        let metrics = PostgresStoreMetrics()
        // Version 1 is emptied by the rewrap but not retired: the first probe reads the table to learn that.
        try metrics.refreshKeyVersionsInUse([1, 2], current: 2, on: connection)
        #expect(metrics.snapshot.keyVersionsInUse == 1)
        let read = try rowsScanned(on: connection) {
            for _ in 0..<5 { try metrics.refreshKeyVersionsInUse([1, 2], current: 2, on: connection) }
        }
        #expect(metrics.snapshot.keyVersionsInUse == 1)
        // Each probe stops at the first record sealed under version 2; version 1 is not probed again.
        #expect(read <= 5 * 10, "five probes read \(read) rows of \(records)")

        // The current version is probed while it seals nothing, and counts as soon as it seals a record.
        _ = try await store.rotateDataKey()
        try metrics.refreshKeyVersionsInUse([1, 2, 3], current: 3, on: connection)
        #expect(metrics.snapshot.keyVersionsInUse == 1)
        try await store.put("cards", id: "new", value: [1], condition: .absent)
        try metrics.refreshKeyVersionsInUse([1, 2, 3], current: 3, on: connection)
        #expect(metrics.snapshot.keyVersionsInUse == 2)
    }
}
