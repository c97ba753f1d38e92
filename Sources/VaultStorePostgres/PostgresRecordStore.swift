public import Foundation
public import VaultCore
public import VaultCrypto
public import VaultStore

/// Settings of a ``PostgresRecordStore``.
public struct PostgresStoreOptions: Sendable {
    /// The libpq connection URI or key=value string (multi-host allowed). Never logged.
    public var uri: String
    /// Connections in the pool (each with its own thread).
    public var poolSize: Int
    /// Two: each connection carries up to 64 reads or 32 commits per round trip, and the requests that arrive while
    /// both are busy go together in the next round. More connections spread the same requests over more, smaller
    /// rounds, which cost CPU on both sides: measured on a 2-core host shared with PostgreSQL, 8 per daemon served
    /// fewer tokenizations than 2 (docs/operations.md, "Performance: the pool's size"). Raise it for a distant
    /// database (see the operations guide's sizing).
    public static let defaultPoolSize = 2
    /// `synchronous_commit` for this store's sessions: `on`, `remote_apply`, `remote_write`, `local` or `off`.
    /// An answer means the database acknowledged the commit at this level.
    public var synchronousCommit: String
    /// How long a request waits for the database (while it reconnects) before it fails `.unavailable`.
    public var requestTimeout: TimeInterval
    /// How often the keyring's generation is checked for changes made by other daemons.
    public var keyRefreshInterval: TimeInterval
    public var applicationName: String
    public var keyRotation: KeyRotationPolicy
    /// The master key in hand (rebuilt from shares, or in an HSM); nil reads the key file of the keys directory.
    public var masterKey: (any KeyEncryptionKey)?
    public var clock: any WallClock
    public var logger: Logger

    public static let synchronousCommitLevels = ["on", "remote_apply", "remote_write", "local", "off"]

    public init(
        uri: String, poolSize: Int = defaultPoolSize, synchronousCommit: String = "on",
        requestTimeout: TimeInterval = 15,
        keyRefreshInterval: TimeInterval = 0.25, applicationName: String = "cardvault",
        keyRotation: KeyRotationPolicy = KeyRotationPolicy(), clock: any WallClock = SystemClock(),
        logger: Logger = .disabled
    ) {
        self.uri = uri
        self.poolSize = poolSize
        self.synchronousCommit = synchronousCommit
        self.requestTimeout = requestTimeout
        self.keyRefreshInterval = keyRefreshInterval
        self.applicationName = applicationName
        self.keyRotation = keyRotation
        self.clock = clock
        self.logger = logger
    }
}

/// The record store over PostgreSQL (libpq), for several daemons sharing one replicated database.
///
/// Each value is sealed here with AES-256-GCM under the current data key (``DatabaseKeyRing``), its AAD
/// binding the collection, id, data key version and record version, before it is sent: the database sees
/// ciphertext, names (the domain's ids, whose card-derived parts are keyed fingerprints) and versions.
/// A batch is one plain statement (``putStatement``; `cardvault_commit` when it names a record twice or missed a
/// condition), compare-and-set on each record's version; a failed condition answers ``StoreError`` `.conflict`
/// with nothing applied. An
/// unconditional put reads the record's version first and writes with that version as its condition,
/// trying again if another write came in between. Commits are acknowledged once PostgreSQL acknowledged
/// them at the configured `synchronous_commit` level.
public final class PostgresRecordStore: RecordStore, Sendable {
    public let options: PostgresStoreOptions
    public let keyRing: DatabaseKeyRing
    let pool: PostgresPool
    private let watcher: KeyRingWatcher

    static let getStatement = PostgresStatement(
        name: "cv_get",
        sql: "SELECT version, key_version, value FROM cardvault_records WHERE collection = $1 AND id = $2")
    static let scanStatement = PostgresStatement(
        name: "cv_scan",
        sql: """
            SELECT id, version, key_version, value FROM cardvault_records
            WHERE collection = $1 AND id >= $2 AND id < $3 AND id > $4 ORDER BY id LIMIT $5
            """)
    static let countStatement = PostgresStatement(
        name: "cv_count",
        sql: """
            SELECT count(*) FROM (SELECT 1 FROM cardvault_records
            WHERE collection = $1 AND id >= $2 AND id < $3 AND id > $4 ORDER BY id LIMIT $5) AS page
            """)
    static let versionsStatement = PostgresStatement(
        name: "cv_versions",
        sql: """
            SELECT u.ordinal, r.version FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(collection, id, ordinal)
            JOIN cardvault_records r ON r.collection = u.collection AND r.id = u.id
            """)
    static let commitStatement = PostgresStatement(
        name: "cv_apply",
        sql: "SELECT cardvault_commit($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::integer, $6::bytea[])")

    /// A batch whose records are all distinct, as one plain statement (schema version 2): inserts (`ON CONFLICT
    /// DO NOTHING`) and compare-and-set updates and deletes over the batch's arrays, guarded by the key check
    /// (the pool takes the key lock shared in an earlier statement of the same transaction). It answers -1 with
    /// nothing written when the batch was sealed under a version that is no longer current, 0 when every write
    /// met its condition, and otherwise raises CV001 (`cardvault_conflict()`), which undoes the transaction: the
    /// pool sends the transaction's other batches again, and this batch comes back to ``commit(_:)`` to go
    /// through `cardvault_commit` (``commitStatement``), which names the write at fault. $7: the writes that
    /// must change a row (puts, and deletes with an expected version).
    static let putStatement = PostgresStatement(
        name: "cv_put",
        sql: """
            WITH w AS (
                SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $6::bytea[])
                    AS w(c, i, e, v, val)
            ), k AS (
                SELECT $5::integer = 0 OR coalesce((SELECT current_version FROM cardvault_keyring) = $5::integer, false)
                    AS ok
            ), ins AS (
                INSERT INTO cardvault_records (collection, id, version, key_version, value)
                SELECT c, i, v, $5::integer, val FROM w WHERE e = 0 AND v > 0 AND (SELECT ok FROM k)
                ON CONFLICT DO NOTHING RETURNING 1
            ), upd AS (
                UPDATE cardvault_records r SET version = w.v, key_version = $5::integer, value = w.val
                FROM w WHERE w.e > 0 AND w.v > 0 AND r.collection = w.c AND r.id = w.i AND r.version = w.e
                    AND (SELECT ok FROM k)
                RETURNING 1
            ), del AS (
                DELETE FROM cardvault_records r USING w
                WHERE w.v = 0 AND w.e <> 0 AND r.collection = w.c AND r.id = w.i AND (w.e = -1 OR r.version = w.e)
                    AND (SELECT ok FROM k)
                RETURNING w.e
            ), present AS (
                SELECT count(*) AS n FROM cardvault_records r JOIN w ON w.v = 0 AND w.e = 0
                    AND r.collection = w.c AND r.id = w.i
            )
            SELECT CASE
                WHEN NOT (SELECT ok FROM k) THEN -1
                WHEN (SELECT count(*) FROM ins) + (SELECT count(*) FROM upd) + (SELECT count(*) FROM del WHERE e > 0)
                    = $7::bigint AND (SELECT n FROM present) = 0 THEN 0
                ELSE cardvault_conflict()
            END
            """)

    /// ``putStatement`` for a batch without deletes (every tokenization, most writes): the inserts and the
    /// compare-and-set updates only, so that each execution sets up two fewer sub-statements. Same parameters.
    static let putOnlyStatement = PostgresStatement(
        name: "cv_put_only",
        sql: """
            WITH w AS (
                SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $6::bytea[])
                    AS w(c, i, e, v, val)
            ), k AS (
                SELECT $5::integer = 0 OR coalesce((SELECT current_version FROM cardvault_keyring) = $5::integer, false)
                    AS ok
            ), ins AS (
                INSERT INTO cardvault_records (collection, id, version, key_version, value)
                SELECT c, i, v, $5::integer, val FROM w WHERE e = 0 AND (SELECT ok FROM k)
                ON CONFLICT DO NOTHING RETURNING 1
            ), upd AS (
                UPDATE cardvault_records r SET version = w.v, key_version = $5::integer, value = w.val
                FROM w WHERE w.e > 0 AND r.collection = w.c AND r.id = w.i AND r.version = w.e AND (SELECT ok FROM k)
                RETURNING 1
            )
            SELECT CASE
                WHEN NOT (SELECT ok FROM k) THEN -1
                WHEN (SELECT count(*) FROM ins) + (SELECT count(*) FROM upd) = $7::bigint THEN 0
                ELSE cardvault_conflict()
            END
            """)

    /// The pool's sessions join only by nested loop over the primary key. Every statement of the pool is a lookup
    /// by (collection, id) or a range of it; a batch's statement is prepared once and run with a generic plan that
    /// sees its arrays as about 100 rows, for which the planner (while the table is small, as after a migration)
    /// would pick a hash join over a scan of the whole table, then keep that plan as the table grows.
    static let sessionPlanSettings = "SET enable_hashjoin = off; SET enable_mergejoin = off"

    /// Connects, checks the schema (``PostgresSchema/currentVersion``) and opens the keyring (creating it
    /// in an empty database), then starts the pool.
    /// - Throws: ``PostgresError`` `.schema` when the database needs `cardvault db migrate`, `.connection`
    ///   when it cannot be reached; ``KeyRingError`` for key problems.
    public static func open(options: PostgresStoreOptions, keysDirectory: String) throws -> PostgresRecordStore {
        guard PostgresStoreOptions.synchronousCommitLevels.contains(options.synchronousCommit) else {
            throw PostgresError(
                .configuration, "synchronous_commit must be one of on, remote_apply, remote_write, local, off")
        }
        let connection = try PostgresConnection(uri: options.uri, applicationName: options.applicationName)
        try PostgresSchema.check(on: connection)
        let keyRing = try DatabaseKeyRing.open(
            on: connection, keysDirectory: keysDirectory, masterKey: options.masterKey, policy: options.keyRotation,
            clock: options.clock)
        return PostgresRecordStore(options: options, keyRing: keyRing, watcherConnection: connection)
    }

    /// Creates or upgrades the schema (`cardvault db migrate`).
    /// - Returns: the versions before and after.
    public static func migrate(uri: String) throws -> (from: Int, to: Int) {
        let connection = try PostgresConnection(uri: uri, applicationName: "cardvault-migrate")
        let from = try PostgresSchema.migrate(on: connection)
        return (from, PostgresSchema.currentVersion)
    }

    /// The schema version of the database at `uri` (0: none).
    public static func schemaVersion(uri: String) throws -> Int {
        try PostgresSchema.version(on: try PostgresConnection(uri: uri, applicationName: "cardvault"))
    }

    private init(options: PostgresStoreOptions, keyRing: DatabaseKeyRing, watcherConnection: PostgresConnection) {
        self.options = options
        self.keyRing = keyRing
        let level = options.synchronousCommit
        self.pool = PostgresPool(options: options, connections: options.poolSize, name: "store") { connection in
            try connection.execute("SET synchronous_commit TO '\(level)'")
            try connection.execute(Self.sessionPlanSettings)
        }
        self.watcher = KeyRingWatcher(
            keyRing: keyRing, options: options, connection: watcherConnection, metrics: pool.metrics)
        options.logger.info(
            "record store opened",
            [
                "backend": .string("postgresql"), "pool": .int(options.poolSize),
                "synchronousCommit": .string(level), "keyVersion": .int(Int(keyRing.currentVersion)),
            ])
    }

    /// Stops the pool and the keyring watcher, giving back unused seal reservations. Idempotent.
    public func close() {
        pool.close()
        watcher.stop()
    }

    public var fingerprintKeys: any FingerprintKeySource { keyRing.fingerprintKeys }

    /// Connections of the pool that are up now.
    public var connectedCount: Int { pool.connectedCount }

    // MARK: Sealing

    /// "cvp1", data key version, record version, then collection and id after their lengths.
    static func authenticatedData(collection: String, id: String, keyVersion: UInt32, recordVersion: UInt64) -> [UInt8]
    {
        var aad: [UInt8] = []
        aad.reserveCapacity(18 + collection.utf8.count + id.utf8.count)
        aad += "cvp1".utf8
        withUnsafeBytes(of: keyVersion.littleEndian) { aad += $0 }
        withUnsafeBytes(of: recordVersion.littleEndian) { aad += $0 }
        aad.append(UInt8(collection.utf8.count))
        aad += collection.utf8
        aad.append(UInt8(id.utf8.count))
        aad += id.utf8
        return aad
    }

    func open(
        collection: String, id: String, version: UInt64, keyVersion: UInt32, sealed: [UInt8]
    ) async throws -> [UInt8] {
        var key = keyRing.key(version: keyVersion)
        if key == nil {
            // A version made by another daemon since the last refresh.
            try await keyRing.refresh(pool: pool)
            key = keyRing.key(version: keyVersion)
        }
        guard let key else {
            throw StoreError(
                .corrupted,
                "\(collection)/\(id) is sealed under data key version \(keyVersion), which is retired or unknown")
        }
        do {
            let plain = try AESGCM.open(
                sealed, using: key,
                authenticating: Self.authenticatedData(
                    collection: collection, id: id, keyVersion: keyVersion, recordVersion: version))
            return plain.withUnsafeBytes { Array($0) }
        } catch {
            throw StoreError(.corrupted, "\(collection)/\(id) fails authentication")
        }
    }

    // MARK: RecordStore

    public func get(_ collection: String, id: String) async throws -> Record? {
        try RecordName.validate(collection, what: "collection")
        try RecordName.validate(id, what: "record id")
        return try await record(
            collection, id, from: try await pool.run(Self.getStatement, [.text(collection), .text(id)]))
    }

    /// The record of `collection`/`id` from a read's rows (version, key version, sealed value), opened; nil for none.
    private func record(_ collection: String, _ id: String, from rows: PostgresRows) async throws -> Record? {
        guard !rows.rows.isEmpty, let version = rows.int64(0, 0), let keyVersion = rows.int64(0, 1),
            let sealed = rows.bytes(0, 2)
        else { return nil }
        let value = try await open(
            collection: collection, id: id, version: UInt64(version),
            keyVersion: UInt32(truncatingIfNeeded: keyVersion),
            sealed: sealed)
        return Record(collection: collection, id: id, version: UInt64(version), value: value)
    }

    /// One statement (``PostgresPool/getManyStatement``) for all of `keys`: one job, one round trip.
    public func get(many keys: [(collection: String, id: String)]) async throws -> [Record?] {
        if keys.isEmpty { return [] }
        if keys.count == 1 { return [try await get(keys[0].collection, id: keys[0].id)] }
        for key in keys {
            try RecordName.validate(key.collection, what: "collection")
            try RecordName.validate(key.id, what: "record id")
        }
        let rows = try await pool.run(
            PostgresPool.getManyStatement, [.textArray(keys.map(\.collection)), .textArray(keys.map(\.id))])
        var records: [Record?] = []
        records.reserveCapacity(keys.count)
        for (key, found) in zip(keys, PostgresPool.splitGets(rows, count: keys.count)) {
            records.append(try await record(key.collection, key.id, from: found))
        }
        return records
    }

    /// The bounds of ids with `prefix` (ids are printable ASCII below 0x7F).
    private static func bounds(_ prefix: String, after: String?) -> [PostgresValue] {
        [.text(prefix), .text(prefix + "\u{7F}"), .text(after ?? "")]
    }

    public func scan(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> [Record] {
        guard limit > 0 else { return [] }
        let rows = try await pool.run(
            Self.scanStatement, [.text(collection)] + Self.bounds(prefix, after: after) + [.int64(Int64(limit))])
        var records: [Record] = []
        records.reserveCapacity(rows.rows.count)
        for row in rows.rows.indices {
            guard let id = rows.text(row, 0), let version = rows.int64(row, 1), let keyVersion = rows.int64(row, 2),
                let sealed = rows.bytes(row, 3)
            else { continue }
            let value = try await open(
                collection: collection, id: id, version: UInt64(version),
                keyVersion: UInt32(truncatingIfNeeded: keyVersion),
                sealed: sealed)
            records.append(Record(collection: collection, id: id, version: UInt64(version), value: value))
        }
        return records
    }

    public func count(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> Int {
        guard limit > 0 else { return 0 }
        let rows = try await pool.run(
            Self.countStatement, [.text(collection)] + Self.bounds(prefix, after: after) + [.int64(Int64(limit))])
        return Int(rows.int64(0, 0) ?? 0)
    }

    @discardableResult
    public func commit(_ writes: [RecordWrite]) async throws -> [UInt64] {
        try await measuredCommit { try await commitBatch(writes) }
    }

    private func commitBatch(_ writes: [RecordWrite]) async throws -> [UInt64] {
        for write in writes {
            try RecordName.validate(write.collection, what: "collection")
            try RecordName.validate(write.id, what: "record id")
            if case .put(_, _, let value, _) = write, value.count > Self.maximumValueSize {
                throw StoreError(.invalidArgument, "a value may hold at most \(Self.maximumValueSize) bytes")
            }
        }
        guard !writes.isEmpty else { return [] }
        // The versions of the records written unconditionally (read once; read again after a lost race).
        let unconditional = writes.indices.filter {
            if case .put = writes[$0], writes[$0].condition == .unconditional { return true }
            return false
        }
        for attempt in 0..<32 {
            var known: [Int: UInt64] = [:]
            if !unconditional.isEmpty {
                let rows = try await pool.run(
                    Self.versionsStatement,
                    [
                        .textArray(unconditional.map { writes[$0].collection }),
                        .textArray(unconditional.map { writes[$0].id }),
                    ])
                for row in rows.rows.indices {
                    if let ordinal = rows.int64(row, 0), let version = rows.int64(row, 1) {
                        known[unconditional[Int(ordinal) - 1]] = UInt64(version)
                    }
                }
            }
            let plan = try Self.plan(writes, unconditionalVersions: known)
            let puts = plan.versions.filter { $0 > 0 }.count
            var key: (version: UInt32, key: SymmetricKey)?
            if puts > 0 { key = try await keyRing.reserveSeals(puts, pool: pool, logger: options.logger) }
            var values: [[UInt8]] = []
            values.reserveCapacity(writes.count)
            var probe: PostgresPool.CommitProbe?
            for (index, write) in writes.enumerated() {
                guard case .put(let collection, let id, let value, _) = write, let key else {
                    values.append([])
                    continue
                }
                let aad = Self.authenticatedData(
                    collection: collection, id: id, keyVersion: key.version, recordVersion: plan.versions[index])
                let sealed = try AESGCM.seal(value, using: key.key, authenticating: aad)
                if probe == nil { probe = PostgresPool.CommitProbe(collection: collection, id: id, sealed: sealed) }
                values.append(sealed)
            }
            let parameters: [PostgresValue] = [
                .textArray(writes.map(\.collection)), .textArray(writes.map(\.id)), .int64Array(plan.expected),
                .int64Array(plan.versions.map { Int64($0) }), .int32(Int32(bitPattern: key?.version ?? 0)),
                .byteaArray(values),
            ]
            let rows: PostgresRows
            if plan.distinct {
                let batch = PostgresPool.PlainBatch(
                    collections: writes.map(\.collection), ids: writes.map(\.id), expected: plan.expected,
                    versions: plan.versions.map { Int64($0) }, keyVersion: Int32(bitPattern: key?.version ?? 0),
                    values: values, mustChange: Int64(plan.mustChange))
                let statement = plan.versions.contains(0) ? Self.putStatement : Self.putOnlyStatement
                do {
                    rows = try await pool.run(
                        statement, parameters + [.int64(Int64(plan.mustChange))], kind: .commit(probe: probe),
                        plain: batch)
                } catch let error as PostgresError where error.sqlState == PostgresPool.conflictState {
                    // A missed condition undid the plain statement: the same batch (same seals) through the
                    // function, which names the write at fault (or applies, if the record changed back meanwhile).
                    rows = try await pool.run(Self.commitStatement, parameters, kind: .commit(probe: probe))
                }
            } else {
                rows = try await pool.run(Self.commitStatement, parameters, kind: .commit(probe: probe))
            }
            let outcome = rows.int64(0, 0) ?? 0
            if outcome == 0 { return plan.versions }
            if outcome == -1 {
                // Sealed under a version another daemon replaced meanwhile: learn the new one, seal again.
                try await keyRing.refresh(pool: pool)
                continue
            }
            let failed = Int(outcome) - 1
            guard failed >= 0, failed < writes.count else { throw StoreError(.unavailable, "unexpected commit answer") }
            if plan.unconditionalStaleness.contains(failed) && attempt < 31 {
                continue  // another write came in between our read and our write: read again
            }
            throw StoreError(.conflict, "\(writes[failed].collection)/\(writes[failed].id) changed since it was read")
        }
        throw StoreError(.conflict, "too many concurrent writers on the same records")
    }

    /// The largest value accepted (as the file store).
    static let maximumValueSize = 16 << 20

    /// What a batch sends: each write's expected version (-1 any, 0 absent) and new version (0 delete).
    struct Plan {
        var expected: [Int64]
        var versions: [UInt64]
        /// Writes whose expected version came from a read (an unconditional put): failing is no conflict.
        var unconditionalStaleness: Set<Int>
        /// Whether every write names a record of its own (the plain statement's case; otherwise the function,
        /// which applies the writes in order, does the batch).
        var distinct = true
        /// Writes that must change a row to meet their condition: puts, and deletes with an expected version.
        var mustChange = 0
    }

    /// A record a batch names, as the key of the writes seen so far (no "collection/id" text made per write).
    private struct Name: Hashable, CustomStringConvertible {
        var collection: String
        var id: String
        var description: String { collection + "/" + id }
    }

    /// Plans a batch against the versions read for its unconditional puts, with the later writes of a batch
    /// seeing the earlier ones (as the other stores do). Throws `.conflict` for a batch that contradicts itself.
    static func plan(_ writes: [RecordWrite], unconditionalVersions: [Int: UInt64]) throws -> Plan {
        var staged: [Name: UInt64] = [:]  // version after the earlier writes (0: absent)
        staged.reserveCapacity(writes.count)
        var plan = Plan(expected: [], versions: [], unconditionalStaleness: [])
        plan.expected.reserveCapacity(writes.count)
        plan.versions.reserveCapacity(writes.count)
        for (index, write) in writes.enumerated() {
            let name = Name(collection: write.collection, id: write.id)
            let stagedVersion = staged[name]
            if stagedVersion != nil { plan.distinct = false }
            let expected: Int64
            switch write.condition {
            case .absent:
                if let stagedVersion, stagedVersion != 0 {
                    throw StoreError(.conflict, "\(name) exists already")
                }
                expected = 0
            case .version(let version):
                if let stagedVersion, stagedVersion != version {
                    throw StoreError(.conflict, "\(name) changed since it was read")
                }
                expected = Int64(version)
            case .unconditional:
                if let stagedVersion {
                    expected = Int64(stagedVersion)
                } else if case .put = write {
                    expected = Int64(unconditionalVersions[index] ?? 0)
                    plan.unconditionalStaleness.insert(index)
                } else {
                    expected = -1
                }
            }
            switch write {
            case .put:
                let current = UInt64(max(0, expected))
                let (next, overflow) = current.addingReportingOverflow(1)
                guard !overflow else { throw StoreError(.invalidArgument, "\(name) has no next version") }
                plan.versions.append(next)
                staged[name] = next
            case .delete:
                plan.versions.append(0)
                staged[name] = 0
            }
            // A write after an earlier one of the same batch is checked against it (the function applies them in order).
            plan.expected.append(expected)
            if plan.versions.last != 0 || expected > 0 { plan.mustChange += 1 }
        }
        return plan
    }
}

/// Polls the keyring's generation on its own connection and reloads it when another daemon changed it,
/// so a rotation or a retirement is seen within ``PostgresStoreOptions/keyRefreshInterval``. Reconnects
/// after a failover by itself.
final class KeyRingWatcher: Sendable {
    private let stopping = Locked(false)
    private let done = NSCondition()
    private let finished = Locked(false)

    init(
        keyRing: DatabaseKeyRing, options: PostgresStoreOptions, connection: PostgresConnection,
        metrics: PostgresStoreMetrics? = nil
    ) {
        let box = ConnectionBox(connection)
        let thread = Thread.named("cv-pg-keys") { [self] in
            var connection: PostgresConnection? = box.take()
            var lastUsageCheck = Date.distantPast
            while !stopping.withLock({ $0 }) {
                Thread.sleep(forTimeInterval: options.keyRefreshInterval)
                do {
                    if connection == nil {
                        connection = try PostgresConnection(uri: options.uri, applicationName: options.applicationName)
                    }
                    try connection!.prepare(
                        DatabaseKeyRing.generationStatement.name, DatabaseKeyRing.generationStatement.sql)
                    let rows = try connection!.run(DatabaseKeyRing.generationStatement.name, [])
                    if let generation = rows.int64(0, 0), generation != keyRing.generation {
                        try keyRing.reload(on: connection!)
                        options.logger.info("data keys reloaded", ["currentVersion": .int(Int(keyRing.currentVersion))])
                    }
                    // For /metrics: the data key versions in use, every 5 s (a scan per version that stops at its
                    // first record; emptied old versions are not probed again).
                    if let metrics, Date().timeIntervalSince(lastUsageCheck) >= 5 {
                        lastUsageCheck = Date()
                        try metrics.refreshKeyVersionsInUse(
                            keyRing.dataKeys.filter { !$0.retired }.map(\.version), current: keyRing.currentVersion,
                            on: connection!)
                    }
                } catch let error as PostgresError where error.code == .connection {
                    connection = nil
                } catch {
                    options.logger.warning(
                        "data keys not reloaded", ["error": .string(String(describing: type(of: error)))])
                }
            }
            if let connection { keyRing.releaseUnusedSeals(on: connection) }
            finished.withLock { $0 = true }
            done.lock()
            done.broadcast()
            done.unlock()
        }
        thread.start()
    }

    func stop() {
        stopping.withLock { $0 = true }
        done.lock()
        while !finished.withLock({ $0 }) { _ = done.wait(until: Date().addingTimeInterval(0.1)) }
        done.unlock()
    }
}

/// Hands a connection made on one thread to the thread that will own it.
private final class ConnectionBox: @unchecked Sendable {
    private var connection: PostgresConnection?
    init(_ connection: PostgresConnection) { self.connection = connection }
    func take() -> PostgresConnection? {
        defer { connection = nil }
        return connection
    }
}
