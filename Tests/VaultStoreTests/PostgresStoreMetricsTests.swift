import Foundation
import Testing
import VaultCore
import VaultStore
import VaultStorePostgres

/// The PostgreSQL store's `/metrics` series (named like the file store's) and the leader gauge of background jobs.
@Suite struct PostgresStoreMetricsTests {
    /// The value of one sample line (`name{labels} value`) in Prometheus text.
    private func sample(_ text: String, _ series: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    @Test func commitsConflictsAndThePoolAppearAndMoveWithoutTheURI() async throws {
        let sandbox = try PostgresSandbox()
        let store = sandbox.store.store
        let before = store.storeMetricsText()
        #expect(sample(before, "cardvault_store_commits_total{outcome=\"applied\"}") == 0)
        #expect(sample(before, "cardvault_store_pool_connections{state=\"size\"}") == 4)
        try await sandbox.store.put("cards", id: "c1", value: [1], condition: .absent)
        try await sandbox.store.put("cards", id: "c2", value: [2], condition: .absent)
        await #expect(throws: StoreError.self) {
            try await sandbox.store.put("cards", id: "c1", value: [3], condition: .absent)
        }
        let after = store.storeMetricsText()
        #expect(sample(after, "cardvault_store_commits_total{outcome=\"applied\"}") == 2)
        #expect(sample(after, "cardvault_store_commits_total{outcome=\"conflict\"}") == 1)
        #expect(sample(after, "cardvault_store_conflicts_total") == 1)
        #expect(sample(after, "cardvault_store_commit_seconds_count") == 3)
        #expect(sample(after, "cardvault_store_commit_seconds_bucket{le=\"+Inf\"}") == 3)
        #expect((sample(after, "cardvault_store_commit_seconds_sum") ?? 0) > 0)
        #expect((sample(after, "cardvault_store_pool_connections{state=\"connected\"}") ?? 0) >= 1)
        #expect(sample(after, "cardvault_store_writable") == 1)
        #expect(sample(after, "cardvault_store_reconnects_total") == 0)
        #expect(sample(after, "cardvault_store_in_doubt_commits_total{resolution=\"applied\"}") == 0)
        #expect(sample(after, "cardvault_store_pool_waits_total") != nil)
        // The data key versions in use: checked by the keyring watcher every 5 s. Its first check may come before
        // the puts above (it then counts 0 versions), so this waits for the one after them.
        let deadline = Date().addingTimeInterval(15)
        while sample(store.storeMetricsText(), "cardvault_data_key_versions_in_use") != 1, Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(sample(store.storeMetricsText(), "cardvault_data_key_versions_in_use") == 1)
        // Neither the URI (it may carry a password) nor the host or socket directory.
        #expect(!after.contains(sandbox.url) && !after.contains("postgresql:") && !after.contains("host="))
    }

    @Test func aBrokenConnectionCountsAReconnect() async throws {
        let name = "cardvault-reconnect-\(UInt32.random(in: 0...UInt32.max))"
        let sandbox = try PostgresSandbox { PostgresStoreOptions(uri: $0, poolSize: 2, applicationName: name) }
        let store = sandbox.store.store
        try await sandbox.store.put("cards", id: "c1", value: [1])
        let cluster = try #require(PostgresTestCluster.shared)
        // Every session of this store ends (as in a failover); the pool connects again.
        _ = try cluster.psql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '\(name)'")
        let deadline = Date().addingTimeInterval(10)
        while sample(store.storeMetricsText(), "cardvault_store_reconnects_total") == 0, Date() < deadline {
            _ = try? await sandbox.store.get("cards", id: "c1")
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect((sample(store.storeMetricsText(), "cardvault_store_reconnects_total") ?? 0) >= 1)
        #expect(try await sandbox.store.get("cards", id: "c1")?.value == [1])
    }

    @Test func theLeaderGaugeShowsWhichDaemonLeadsEachJob() async throws {
        let sandbox = try PostgresSandbox()
        let first = AdvisoryLockLeadership(options: PostgresStoreOptions(uri: sandbox.url))
        let second = AdvisoryLockLeadership(options: PostgresStoreOptions(uri: sandbox.url))
        defer {
            first.close()
            second.close()
        }
        #expect(try await first.runIfLeader("record-sweeper") {})
        #expect(try await !second.runIfLeader("record-sweeper") {})
        #expect(try await second.runIfLeader("hook-delivery") {})
        let one = first.metricsText()
        let two = second.metricsText()
        #expect(sample(one, "cardvault_background_job_leader{job=\"record-sweeper\"}") == 1)
        #expect(sample(one, "cardvault_background_job_leader{job=\"hook-delivery\"}") == nil)
        #expect(sample(two, "cardvault_background_job_leader{job=\"record-sweeper\"}") == 0)
        #expect(sample(two, "cardvault_background_job_leader{job=\"hook-delivery\"}") == 1)
        #expect(!one.contains(sandbox.url) && !two.contains(sandbox.url))
    }
}
