import Foundation
import VaultCore
import VaultStore

/// What the PostgreSQL store measured, for `/metrics` (the counterpart of the file store's `StoreMetrics`): the
/// latency of each commit as the domain sees it (sealing, the round trip, the database's acknowledgement, and any
/// read-again of an unconditional put), commits by outcome, the pool's connections and the jobs that had to wait
/// for one, reconnections, and in-doubt commits (their connection broke before the answer) by how they were
/// resolved. No label holds a URI, a host, a collection or an id: every label comes from a fixed vocabulary.
final class PostgresStoreMetrics: Sendable {
    /// Upper bounds of the commit latency histogram, in seconds.
    static let commitBounds: [Double] = [
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15,
    ]
    private static let commitBoundLabels = commitBounds.map { String($0) }

    struct Values: Sendable {
        var commitBuckets = [UInt64](repeating: 0, count: PostgresStoreMetrics.commitBounds.count + 1)
        var commitNanos: UInt64 = 0
        var commits: UInt64 = 0
        var conflicts: UInt64 = 0
        var failures: UInt64 = 0
        var inUse = 0
        var waits: UInt64 = 0
        var reconnects: UInt64 = 0
        var inDoubtApplied: UInt64 = 0
        var inDoubtResent: UInt64 = 0
        /// Data key versions sealing at least one record, as of the last check (nil before the first).
        var keyVersionsInUse: Int?
    }

    private let values = Locked(Values())

    init() {}

    /// A commit answered after `nanoseconds`: applied, a conflict, or another failure.
    func committed(nanoseconds: UInt64, error: (any Error)?) {
        let seconds = Double(nanoseconds) / 1e9
        let bucket = Self.commitBounds.firstIndex { seconds <= $0 } ?? Self.commitBounds.count
        let conflict = (error as? StoreError)?.code == .conflict
        values.withLock { values in
            values.commitBuckets[bucket] += 1
            values.commitNanos &+= nanoseconds
            values.commits &+= 1
            if conflict {
                values.conflicts &+= 1
            } else if error != nil {
                values.failures &+= 1
            }
        }
    }

    /// A job queued while every connection of a pool of `size` was busy.
    func queued(poolSize size: Int) {
        values.withLock { values in
            if values.inUse >= size { values.waits &+= 1 }
        }
    }

    /// A connection starts (`true`) or ends (`false`) working on jobs.
    func working(_ starts: Bool) { values.withLock { $0.inUse += starts ? 1 : -1 } }

    /// A connection made again after one of the pool's connections broke.
    func reconnected() { values.withLock { $0.reconnects &+= 1 } }

    /// An in-doubt commit found applied (answered as done) or not (sent again).
    func inDoubtResolved(applied: Bool) {
        values.withLock { values in
            if applied { values.inDoubtApplied &+= 1 } else { values.inDoubtResent &+= 1 }
        }
    }

    var snapshot: Values { values.withLock { $0 } }

    /// Which of `versions` seal at least one record: for each, a scan of the records that stops at the first one
    /// sealed under it (`LIMIT 1` in a lateral subquery, so each version's scan is its own and the planner cannot
    /// turn the probe into one pass over the whole table). Schema version 3 has no index on `key_version`, so a
    /// version that seals nothing costs a full scan: see ``drained``.
    static let keyVersionsInUseStatement = PostgresStatement(
        name: "cv_key_versions_in_use",
        sql: """
            SELECT v.version FROM unnest($1::bigint[]) AS v(version)
            CROSS JOIN LATERAL (SELECT 1 FROM cardvault_records r WHERE r.key_version = v.version LIMIT 1) AS found
            """)

    /// Versions found sealing no record while they were not the current one. Nothing seals under a version that is
    /// no longer current (every commit and rewrap checks `p_key` against the keyring's current version under the
    /// key lock, and versions only go up), so such a version stays empty and is not probed again; without this, a
    /// rewrapped version waiting to be retired would cost a full scan of the records at every check.
    private let drained = Locked(Set<UInt32>())

    /// Counts the data key versions in use among `versions` (the unretired ones; `current` is the keyring's current
    /// version) on `connection`, the keyring watcher's, on its own thread.
    func refreshKeyVersionsInUse(_ versions: [UInt32], current: UInt32, on connection: PostgresConnection) throws {
        let known = drained.withLock { $0 }
        let probed = versions.filter { !known.contains($0) }
        try connection.prepare(Self.keyVersionsInUseStatement.name, Self.keyVersionsInUseStatement.sql)
        let rows = try connection.run(Self.keyVersionsInUseStatement.name, [.int64Array(probed.map { Int64($0) })])
        let found = Set(rows.rows.indices.compactMap { rows.int64($0, 0).map { UInt32(truncatingIfNeeded: $0) } })
        drained.withLock { $0.formUnion(probed.filter { $0 != current && !found.contains($0) }) }
        values.withLock { $0.keyVersionsInUse = found.count }
    }

    /// Prometheus text, with the pool's configured size, its connections up and the jobs queued now.
    func prometheusText(poolSize: Int, connected: Int, queued: Int) -> String {
        let values = snapshot
        var text = "# HELP cardvault_store_commit_seconds Time each commit took, from the call to PostgreSQL's "
        text += "acknowledgement (or its refusal).\n# TYPE cardvault_store_commit_seconds histogram\n"
        var cumulative: UInt64 = 0
        for (index, bound) in Self.commitBoundLabels.enumerated() {
            cumulative += values.commitBuckets[index]
            text += "cardvault_store_commit_seconds_bucket{le=\"" + bound + "\"} " + String(cumulative) + "\n"
        }
        text += "cardvault_store_commit_seconds_bucket{le=\"+Inf\"} " + String(values.commits) + "\n"
        text += "cardvault_store_commit_seconds_sum " + String(Double(values.commitNanos) / 1e9) + "\n"
        text += "cardvault_store_commit_seconds_count " + String(values.commits) + "\n"
        let applied = values.commits &- values.conflicts &- values.failures
        text += "# HELP cardvault_store_commits_total Commits by outcome: applied, conflict (a condition failed, "
        text += "nothing applied), failed (the database unreachable or refusing).\n"
        text += "# TYPE cardvault_store_commits_total counter\n"
        text += "cardvault_store_commits_total{outcome=\"applied\"} " + String(applied) + "\n"
        text += "cardvault_store_commits_total{outcome=\"conflict\"} " + String(values.conflicts) + "\n"
        text += "cardvault_store_commits_total{outcome=\"failed\"} " + String(values.failures) + "\n"
        text += "# HELP cardvault_store_conflicts_total Commits refused because a record changed since it was read.\n"
        text += "# TYPE cardvault_store_conflicts_total counter\n"
        text += "cardvault_store_conflicts_total " + String(values.conflicts) + "\n"
        text += "# HELP cardvault_store_pool_connections The store's PostgreSQL connections: configured (size), up now "
        text += "(connected), working on requests now (in_use).\n# TYPE cardvault_store_pool_connections gauge\n"
        text += "cardvault_store_pool_connections{state=\"size\"} " + String(poolSize) + "\n"
        text += "cardvault_store_pool_connections{state=\"connected\"} " + String(connected) + "\n"
        text += "cardvault_store_pool_connections{state=\"in_use\"} " + String(max(0, values.inUse)) + "\n"
        text += "# HELP cardvault_store_pool_queued Requests waiting for a connection now.\n"
        text += "# TYPE cardvault_store_pool_queued gauge\n"
        text += "cardvault_store_pool_queued " + String(queued) + "\n"
        text += "# HELP cardvault_store_pool_waits_total Requests queued while every connection was busy.\n"
        text += "# TYPE cardvault_store_pool_waits_total counter\n"
        text += "cardvault_store_pool_waits_total " + String(values.waits) + "\n"
        text += "# HELP cardvault_store_reconnects_total Connections made again after one broke (a restart or a "
        text += "failover of the database).\n# TYPE cardvault_store_reconnects_total counter\n"
        text += "cardvault_store_reconnects_total " + String(values.reconnects) + "\n"
        text += "# HELP cardvault_store_in_doubt_commits_total Commits whose connection broke before the answer, by "
        text += "resolution: applied (found written, answered as done) or resent (not written, sent again).\n"
        text += "# TYPE cardvault_store_in_doubt_commits_total counter\n"
        text += "cardvault_store_in_doubt_commits_total{resolution=\"applied\"} " + String(values.inDoubtApplied) + "\n"
        text += "cardvault_store_in_doubt_commits_total{resolution=\"resent\"} " + String(values.inDoubtResent) + "\n"
        if let inUse = values.keyVersionsInUse {
            text += "# HELP cardvault_data_key_versions_in_use Data key versions that seal at least one live record "
            text += "(checked every few seconds).\n# TYPE cardvault_data_key_versions_in_use gauge\n"
            text += "cardvault_data_key_versions_in_use " + String(inUse) + "\n"
        }
        text += "# HELP cardvault_store_writable 1 while a connection to a writable database is up, 0 otherwise.\n"
        text += "# TYPE cardvault_store_writable gauge\n"
        text += "cardvault_store_writable " + (connected > 0 ? "1" : "0") + "\n"
        return text
    }
}

extension PostgresRecordStore {
    /// Prometheus text about the store: commit latency and outcomes, the pool, reconnections, in-doubt commits.
    public func storeMetricsText() -> String {
        pool.metrics.prometheusText(
            poolSize: options.poolSize, connected: pool.connectedCount, queued: pool.queuedCount)
    }

    /// Measures one commit (``commit(_:)``'s body) into the store's metrics.
    func measuredCommit(_ body: () async throws -> [UInt64]) async throws -> [UInt64] {
        let started = DispatchTime.now().uptimeNanoseconds
        do {
            let versions = try await body()
            pool.metrics.committed(nanoseconds: DispatchTime.now().uptimeNanoseconds &- started, error: nil)
            return versions
        } catch {
            pool.metrics.committed(nanoseconds: DispatchTime.now().uptimeNanoseconds &- started, error: error)
            throw error
        }
    }
}
