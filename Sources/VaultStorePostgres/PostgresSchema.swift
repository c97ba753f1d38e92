import Foundation
import VaultStore

/// The database schema of the PostgreSQL store, its version and its migrations.
///
/// Tables: `cardvault_schema` (one row: the schema version), `cardvault_keyring` (one row: the check
/// value of the master key, the wrapped fingerprint secret, the current data key version and a
/// generation bumped by every key change), `cardvault_data_keys` (each version's wrapped key, NULL once
/// retired, and the seals reserved under it) and `cardvault_records` (collection, id, version, data key
/// version, sealed value). Values are sealed by CardVault before they leave the process: the database
/// holds AES-256-GCM ciphertext and names only.
///
/// Since version 2 a batch is normally one plain SQL statement (``PostgresRecordStore/putStatement``: data-modifying
/// CTEs over the batch's arrays, no PL/pgSQL, no subtransaction) that calls `cardvault_conflict()` to raise
/// SQLSTATE CV001 when any write missed its condition, aborting the transaction it is in; the pool then sends the
/// other batches of that transaction again and this one alone through `cardvault_commit`, which names the write
/// at fault.
///
/// `cardvault_commit` applies one atomic batch with compare-and-set (`UPDATE … WHERE version = $n`,
/// `INSERT … ON CONFLICT DO NOTHING`) inside its own subtransaction: on a failed condition it undoes
/// its batch and returns the 1-based index of the write at fault, so several batches can share one
/// transaction. It first takes the key lock shared and returns -1 when the batch was sealed under a
/// version that is no longer the current one (a rotation by another daemon): the caller reloads the
/// keyring and seals again. Key changes take the same lock exclusively, so a version is never retired
/// while a write sealed under it is in flight.
public enum PostgresSchema {
    /// The schema version this binary reads and writes.
    public static let currentVersion = 4

    /// The advisory lock key of data key changes (shared by writes, exclusive for rotations and retirements).
    static let keyLock: Int64 = 0x4356_4B45_5952_494E  // "CVKEYRIN"
    /// The advisory lock key held while migrating.
    static let migrationLock: Int64 = 0x4356_4D49_4752_4154  // "CVMIGRAT"

    /// Version 1: everything; each later version, what changed (a step runs once, in order).
    static let migrations: [Int: String] = [
        1: """
        CREATE TABLE IF NOT EXISTS cardvault_keyring (
            singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
            kek_check bytea NOT NULL,
            fingerprint_secret bytea NOT NULL,
            current_version integer NOT NULL,
            generation bigint NOT NULL DEFAULT 1
        );
        CREATE TABLE IF NOT EXISTS cardvault_data_keys (
            version integer PRIMARY KEY,
            created bigint NOT NULL,
            wrapped bytea,
            seals bigint NOT NULL DEFAULT 0
        );
        CREATE TABLE IF NOT EXISTS cardvault_records (
            collection text COLLATE "C" NOT NULL,
            id text COLLATE "C" NOT NULL,
            version bigint NOT NULL,
            key_version integer NOT NULL,
            value bytea NOT NULL,
            PRIMARY KEY (collection, id)
        );
        ALTER TABLE cardvault_records ALTER COLUMN value SET STORAGE EXTERNAL;
        CREATE INDEX IF NOT EXISTS cardvault_records_key_version ON cardvault_records (key_version);
        CREATE OR REPLACE FUNCTION cardvault_commit(
            p_collections text[], p_ids text[], p_expected bigint[], p_versions bigint[], p_key integer, p_values bytea[]
        ) RETURNS integer LANGUAGE plpgsql AS $$
        DECLARE
            i integer;
            n integer := coalesce(array_length(p_ids, 1), 0);
            failed integer := 0;
        BEGIN
            IF p_key <> 0 THEN
                PERFORM pg_advisory_xact_lock_shared(\(keyLock));
                IF p_key IS DISTINCT FROM (SELECT current_version FROM cardvault_keyring) THEN
                    RETURN -1;
                END IF;
            END IF;
            BEGIN
                FOR i IN 1..n LOOP
                    failed := i;
                    IF p_versions[i] = 0 THEN
                        IF p_expected[i] = -1 THEN
                            DELETE FROM cardvault_records WHERE collection = p_collections[i] AND id = p_ids[i];
                        ELSIF p_expected[i] = 0 THEN
                            PERFORM 1 FROM cardvault_records WHERE collection = p_collections[i] AND id = p_ids[i];
                            IF FOUND THEN RAISE EXCEPTION USING ERRCODE = 'CV001'; END IF;
                        ELSE
                            DELETE FROM cardvault_records
                                WHERE collection = p_collections[i] AND id = p_ids[i] AND version = p_expected[i];
                            IF NOT FOUND THEN RAISE EXCEPTION USING ERRCODE = 'CV001'; END IF;
                        END IF;
                    ELSIF p_expected[i] = 0 THEN
                        INSERT INTO cardvault_records (collection, id, version, key_version, value)
                            VALUES (p_collections[i], p_ids[i], p_versions[i], p_key, p_values[i])
                            ON CONFLICT DO NOTHING;
                        IF NOT FOUND THEN RAISE EXCEPTION USING ERRCODE = 'CV001'; END IF;
                    ELSE
                        UPDATE cardvault_records SET version = p_versions[i], key_version = p_key, value = p_values[i]
                            WHERE collection = p_collections[i] AND id = p_ids[i] AND version = p_expected[i];
                        IF NOT FOUND THEN RAISE EXCEPTION USING ERRCODE = 'CV001'; END IF;
                    END IF;
                END LOOP;
            EXCEPTION WHEN SQLSTATE 'CV001' THEN
                RETURN failed;
            END;
            RETURN 0;
        END $$;
        CREATE OR REPLACE FUNCTION cardvault_rewrap(
            p_collection text, p_id text, p_version bigint, p_old integer, p_key integer, p_value bytea
        ) RETURNS integer LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_advisory_xact_lock_shared(\(keyLock));
            IF p_key IS DISTINCT FROM (SELECT current_version FROM cardvault_keyring) THEN
                RETURN -1;
            END IF;
            UPDATE cardvault_records SET key_version = p_key, value = p_value
                WHERE collection = p_collection AND id = p_id AND version = p_version AND key_version = p_old;
            IF FOUND THEN RETURN 1; END IF;
            RETURN 0;
        END $$;
        CREATE TABLE IF NOT EXISTS cardvault_schema (version integer NOT NULL);
        """,
        // Version 2: the plain-SQL commit's way to fail its statement (and so its transaction) on a missed condition.
        2: """
        CREATE OR REPLACE FUNCTION cardvault_conflict() RETURNS integer LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION USING ERRCODE = 'CV001', MESSAGE = 'a condition of the batch failed';
        END $$;
        """,
        // Version 3: writes maintain one index, not two. The index on `key_version` served the admin commands (key
        // status, rewrap, retire), which read the table whole anyway, and the `/metrics` probe of the versions in use,
        // which now stops at each version's first record and skips emptied old versions
        // (`PostgresStoreMetrics.refreshKeyVersionsInUse`). It cost every insert and every update that PostgreSQL
        // could not make HOT one more index entry and WAL record. Pages keep a tenth free so that a record's update
        // usually stays on its page (a HOT update: no new primary key entry either). Together: 10.6 WAL records per
        // tokenization before, 8.3-8.8 after, 5.5 once the probe no longer read the table whole
        // (bench/tools/postgres_statements.py).
        3: """
        DROP INDEX IF EXISTS cardvault_records_key_version;
        ALTER TABLE cardvault_records SET (fillfactor = 90);
        """,
        // Version 4: the custody record every daemon reads before it is unsealed (docs/key-custody.md): the provider,
        // the share parameters, the master key's check value and the master key wrapped under the unseal key.
        4: """
        CREATE TABLE IF NOT EXISTS cardvault_custody (
            singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
            document text NOT NULL
        );
        """,
    ]

    /// The schema version the database is at (0: no CardVault schema).
    static func version(on connection: PostgresConnection) throws -> Int {
        let exists = try connection.execute("SELECT to_regclass('cardvault_schema') IS NOT NULL")
        guard exists.text(0, 0) == "t" else { return 0 }
        let rows = try connection.execute("SELECT max(version) FROM cardvault_schema")
        return rows.rows.first?[0].flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
    }

    /// Creates or upgrades the schema to ``currentVersion`` (one transaction, under an advisory lock, so
    /// daemons or operators running it at once do it once).
    /// - Returns: the version found before.
    @discardableResult
    static func migrate(on connection: PostgresConnection) throws -> Int {
        try connection.execute("BEGIN")
        do {
            try connection.execute("SELECT pg_advisory_xact_lock(\(migrationLock))")
            let found = try version(on: connection)
            guard found <= currentVersion else {
                throw PostgresError(
                    .schema,
                    "the database schema is at version \(found), newer than this binary's \(currentVersion); "
                        + "upgrade CardVault")
            }
            if found < currentVersion {
                for step in (found + 1)...currentVersion {
                    try connection.execute(migrations[step]!)
                }
                try connection.execute("DELETE FROM cardvault_schema")
                try connection.execute("INSERT INTO cardvault_schema (version) VALUES (\(currentVersion))")
            }
            try connection.execute("COMMIT")
            return found
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// Throws ``PostgresError`` `.schema` with what to run unless the database is at ``currentVersion``.
    static func check(on connection: PostgresConnection) throws {
        let found = try version(on: connection)
        if found == currentVersion { return }
        if found == 0 {
            throw PostgresError(
                .schema,
                "the database holds no CardVault schema; run `cardvault db migrate` (with the same databaseURL) first")
        }
        if found < currentVersion {
            throw PostgresError(
                .schema,
                "the database schema is at version \(found), this binary needs version \(currentVersion); "
                    + "run `cardvault db migrate` first")
        }
        throw PostgresError(
            .schema,
            "the database schema is at version \(found), newer than this binary's \(currentVersion); upgrade CardVault")
    }
}
