import Foundation
import VaultCore
public import VaultCrypto
public import VaultStore

extension PostgresRecordStore {
    static let keyCountsStatement = PostgresStatement(
        name: "cv_key_counts", sql: "SELECT key_version, count(*) FROM cardvault_records GROUP BY key_version")
    static let pageStatement = PostgresStatement(
        name: "cv_page",
        sql: """
            SELECT collection, id, version, key_version, value FROM cardvault_records
            WHERE (collection, id) > ($1, $2) ORDER BY collection, id LIMIT $3
            """)
    static let pageOffKeyStatement = PostgresStatement(
        name: "cv_page_off_key",
        sql: """
            SELECT collection, id, version, key_version, value FROM cardvault_records
            WHERE key_version <> $1 AND (collection, id) > ($2, $3) ORDER BY collection, id LIMIT $4
            """)
    static let rewrapStatement = PostgresStatement(
        name: "cv_rewrap",
        sql: "SELECT cardvault_rewrap($1::text, $2::text, $3::bigint, $4::integer, $5::integer, $6::bytea)")

    /// Records per data key version.
    public func keyVersionCounts() async throws -> [UInt32: Int] {
        let rows = try await pool.run(Self.keyCountsStatement, [])
        var counts: [UInt32: Int] = [:]
        for row in rows.rows.indices {
            if let version = rows.int64(row, 0), let count = rows.int64(row, 1) {
                counts[UInt32(truncatingIfNeeded: version)] = Int(count)
            }
        }
        return counts
    }

    /// Every data key version with the records sealed under it.
    public func dataKeyStatus() async throws -> [DataKeyStatus] {
        try await keyRing.refresh(pool: pool)
        let counts = try await keyVersionCounts()
        let current = keyRing.currentVersion
        return keyRing.dataKeys.map {
            DataKeyStatus.of(key: $0, records: counts[$0.version] ?? 0, isCurrent: $0.version == current)
        }
    }

    /// Adds a data key version; every daemon seals under it from its next write on.
    @discardableResult
    public func rotateDataKey() async throws -> DataKeyInfo {
        try await keyRing.rotate(pool: pool, logger: options.logger)
    }

    /// Drops a data key version, refused while any record uses it.
    public func retireDataKey(version: UInt32) async throws {
        try await keyRing.retire(version: version, pool: pool)
        options.logger.notice("data key retired", ["version": .int(Int(version))])
    }

    /// Re-wraps the data keys under a new master key: `replacement` (shares, an HSM), or a fresh key file on this
    /// host when nil (development custody).
    public func rotateMasterKey(to replacement: (any KeyEncryptionKey)? = nil) async throws {
        try await keyRing.rotateMaster(pool: pool, to: replacement)
        options.logger.notice("master key rotated")
    }

    /// Reads and authenticates every record; reports those that fail (never their values).
    public func verify(progress: (@Sendable (Int, Int) -> Void)? = nil) async throws -> VerifyReport {
        let total = try await keyVersionCounts().values.reduce(0, +)
        var report = VerifyReport.of(checked: 0, failures: [], damage: [])
        var after = ("", "")
        while true {
            let rows = try await pool.run(Self.pageStatement, [.text(after.0), .text(after.1), .int64(512)])
            if rows.rows.isEmpty { break }
            for row in rows.rows.indices {
                guard let collection = rows.text(row, 0), let id = rows.text(row, 1) else { continue }
                after = (collection, id)
                report.checked += 1
                guard let version = rows.int64(row, 2), let keyVersion = rows.int64(row, 3),
                    let sealed = rows.bytes(row, 4)
                else { continue }
                do {
                    _ = try await open(
                        collection: collection, id: id, version: UInt64(version),
                        keyVersion: UInt32(truncatingIfNeeded: keyVersion), sealed: sealed)
                } catch let error as StoreError {
                    report.failures.append(VerifyFailure.record(collection: collection, id: id, reason: error.message))
                }
            }
            progress?(report.checked, total)
        }
        return report
    }

    /// Moves every record sealed under an older data key to the current one (same record version, new seal),
    /// each with compare-and-set so that concurrent writes win. Idempotent and resumable.
    public func rewrap(progress: (@Sendable (Int, Int) -> Void)? = nil) async throws -> RewrapReport {
        var report = RewrapReport.empty
        var failed = Set<String>()
        for _ in 0..<8 {
            let current = keyRing.currentVersion
            let counts = try await keyVersionCounts()
            let toMove = counts.filter { $0.key != current }.values.reduce(0, +)
            if toMove - failed.count <= 0 { break }
            var after = ("", "")
            var done = 0
            var stale = false
            while !stale {
                let rows = try await pool.run(
                    Self.pageOffKeyStatement,
                    [.int32(Int32(bitPattern: current)), .text(after.0), .text(after.1), .int64(256)])
                if rows.rows.isEmpty { break }
                for row in rows.rows.indices {
                    guard let collection = rows.text(row, 0), let id = rows.text(row, 1),
                        let version = rows.int64(row, 2),
                        let keyVersion = rows.int64(row, 3), let sealed = rows.bytes(row, 4)
                    else { continue }
                    after = (collection, id)
                    done += 1
                    if failed.contains(collection + "/" + id) { continue }
                    let value: [UInt8]
                    do {
                        value = try await open(
                            collection: collection, id: id, version: UInt64(version),
                            keyVersion: UInt32(truncatingIfNeeded: keyVersion), sealed: sealed)
                    } catch let error as StoreError {
                        failed.insert(collection + "/" + id)
                        report.failures.append(
                            VerifyFailure.record(collection: collection, id: id, reason: error.message))
                        continue
                    }
                    let key = try await keyRing.reserveSeals(1, pool: pool, logger: options.logger)
                    let resealed = try AESGCM.seal(
                        value, using: key.key,
                        authenticating: Self.authenticatedData(
                            collection: collection, id: id, keyVersion: key.version, recordVersion: UInt64(version)))
                    let answer = try await pool.run(
                        Self.rewrapStatement,
                        [
                            .text(collection), .text(id), .int64(version),
                            .int32(Int32(truncatingIfNeeded: keyVersion)),
                            .int32(Int32(bitPattern: key.version)), .bytes(resealed),
                        ])
                    switch answer.int64(0, 0) ?? 0 {
                    case 1: report.moved += 1
                    case -1:
                        try await keyRing.refresh(pool: pool)
                        stale = true
                    default: break  // changed meanwhile: the new write is on the current key already
                    }
                    if stale { break }
                }
                progress?(min(done, toMove), toMove)
            }
        }
        let current = keyRing.currentVersion
        report.remaining = try await keyVersionCounts().filter { $0.key != current }.values.reduce(0, +)
        options.logger.notice("rewrap finished", ["moved": .int(report.moved), "remaining": .int(report.remaining)])
        return report
    }

    /// Prometheus text about the data keys (as the file store's), from the last refresh.
    public func keyMetricsText() -> String {
        let current = keyRing.currentVersion
        let policy = keyRing.policy
        let now = options.clock.now
        let keys = keyRing.dataKeys
        var text = "# HELP cardvault_data_key_seals AES-GCM seals made under each data key version (upper bound).\n"
        text += "# TYPE cardvault_data_key_seals gauge\n"
        for key in keys {
            let state = key.retired ? "retired" : key.version == current ? "current" : "decrypt-only"
            text += "cardvault_data_key_seals{version=\"\(key.version)\",state=\"\(state)\"} \(key.seals)\n"
        }
        text += "# HELP cardvault_data_key_age_seconds Age of each data key version.\n"
        text += "# TYPE cardvault_data_key_age_seconds gauge\n"
        for key in keys {
            text +=
                "cardvault_data_key_age_seconds{version=\"\(key.version)\"} \(Int64(max(0, now.timeIntervalSince(key.created))))\n"
        }
        text += "# HELP cardvault_data_key_current_version The data key version new records are sealed under.\n"
        text += "# TYPE cardvault_data_key_current_version gauge\n"
        text += "cardvault_data_key_current_version \(current)\n"
        text += "# HELP cardvault_data_key_seal_limit Seals after which the current data key is rotated.\n"
        text += "# TYPE cardvault_data_key_seal_limit gauge\n"
        text += "cardvault_data_key_seal_limit \(policy.maximumSeals)\n"
        text += "# HELP cardvault_database_connections PostgreSQL connections of the pool that are up.\n"
        text += "# TYPE cardvault_database_connections gauge\n"
        text += "cardvault_database_connections \(connectedCount)\n"
        return text
    }
}
