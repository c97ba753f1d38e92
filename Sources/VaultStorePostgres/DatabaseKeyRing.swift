import Foundation
import VaultCore
public import VaultCrypto
import VaultStore

/// The data keys of a PostgreSQL store, kept in the database, wrapped under the master key (KEK): rebuilt from
/// shares or kept in an HSM by every daemon (docs/key-custody.md), or the development key file `<keys>/master.key`.
///
/// Every daemon holds the unwrapped keys in memory and reloads them when the keyring's generation
/// changes: a poll every ``PostgresStoreOptions/keyRefreshInterval`` (250 ms), a write refused by
/// `cardvault_commit` as sealed under a stale version, or a read of a version it does not know yet.
/// Seals are counted in the database in reserved blocks (an upper bound, as in the file keyring), and
/// the version is replaced when it reaches the ``KeyRotationPolicy`` limits, by whichever daemon gets
/// there first (the others see the new current version on their next write).
public final class DatabaseKeyRing: Sendable {
    public let fingerprintKeys: DerivedFingerprintKeys
    public let policy: KeyRotationPolicy
    public let keysDirectory: String
    private let clock: any WallClock

    struct State {
        var kek: any KeyEncryptionKey
        var keys: [UInt32: SymmetricKey] = [:]
        var infos: [DataKeyInfo] = []
        var current: UInt32 = 0
        var generation: Int64 = 0
        /// Seals this daemon reserved in the database and has not used yet, per version.
        var unused: [UInt32: UInt64] = [:]
        /// A reservation of seals is under way (``reserveSeals(_:pool:logger:)``: one at a time).
        var reserving = false
        /// Callers waiting for that reservation (resumed with its error, if it failed).
        var reservationWaiters: [UnsafeContinuation<(any Error)?, Never>] = []
    }

    let state: Locked<State>

    private init(
        keysDirectory: String, state: State, secret: SymmetricKey, policy: KeyRotationPolicy, clock: any WallClock
    ) {
        self.keysDirectory = keysDirectory
        self.state = Locked(state)
        self.fingerprintKeys = DerivedFingerprintKeys(secret: secret)
        self.policy = policy
        self.clock = clock
    }

    static let fingerprintLabel = Array("cardvault fingerprint secret v1".utf8)
    static func dekLabel(_ version: UInt32) -> [UInt8] { Array("cardvault data key v\(version)".utf8) }
    static func kekCheck(_ kek: any KeyEncryptionKey) throws -> [UInt8] { try kek.checkValue() }

    static func readMasterKey(_ keysDirectory: String) throws -> SymmetricKey {
        let path = KeyRing.masterKeyPath(keysDirectory)
        let bytes: SecureBytes
        do {
            bytes = try KeyFile.readSecret(path)
        } catch let error as KeyRingError where error.code == .missing {
            throw KeyRingError(.missing, "master key \(path) does not exist; create it with `cardvault keys init`")
        }
        guard bytes.count == KeyFile.masterKeySize else {
            throw KeyRingError(.invalidMasterKey, "master key \(path) must hold exactly 32 bytes")
        }
        return SymmetricKey(bytes)
    }

    static func wrap(_ key: SymmetricKey, kek: any KeyEncryptionKey, label: [UInt8]) throws -> [UInt8] {
        try kek.wrap(key, label: label)
    }

    static func unwrap(_ sealed: [UInt8], kek: any KeyEncryptionKey, label: [UInt8]) throws -> SymmetricKey {
        do {
            return try kek.unwrap(sealed, label: label)
        } catch {
            throw KeyRingError(
                .damaged, "the database holds a data key that fails authentication under this master key")
        }
    }

    /// Opens the keyring on `connection`, creating it (version 1 and a fingerprint secret) when the
    /// database has none; two daemons creating it at once end up with the same one.
    /// - Parameter masterKey: the master key in hand (shares, an HSM); nil reads `<keysDirectory>/master.key`.
    static func open(
        on connection: PostgresConnection, keysDirectory: String, masterKey: (any KeyEncryptionKey)?,
        policy: KeyRotationPolicy, clock: any WallClock
    ) throws -> DatabaseKeyRing {
        let kek: any KeyEncryptionKey = try masterKey ?? MemoryKeyEncryptionKey(readMasterKey(keysDirectory))
        var rows = try connection.execute("SELECT 1 FROM cardvault_keyring")
        if rows.rows.isEmpty {
            let dek = SymmetricKey.random()
            let secret = SymmetricKey.random()
            try connection.prepare(
                "cv_keyring_create",
                """
                WITH ring AS (
                    INSERT INTO cardvault_keyring (kek_check, fingerprint_secret, current_version) VALUES ($1, $2, 1)
                    ON CONFLICT DO NOTHING RETURNING 1
                )
                INSERT INTO cardvault_data_keys (version, created, wrapped) SELECT 1, $3, $4 FROM ring
                """)
            _ = try connection.run(
                "cv_keyring_create",
                [
                    .bytes(try kekCheck(kek)), .bytes(try wrap(secret, kek: kek, label: fingerprintLabel)),
                    .int64(Int64(clock.now.timeIntervalSince1970)), .bytes(try wrap(dek, kek: kek, label: dekLabel(1))),
                ])
            rows = try connection.execute("SELECT 1 FROM cardvault_keyring")
        }
        let ring = try connection.execute(
            "SELECT encode(kek_check, 'hex'), encode(fingerprint_secret, 'hex') FROM cardvault_keyring")
        guard let checkHex = ring.text(0, 0), let secretHex = ring.text(0, 1), let check = hexBytes(checkHex),
            let wrappedSecret = hexBytes(secretHex)
        else { throw KeyRingError(.damaged, "the database keyring cannot be read") }
        guard ConstantTime.equals(try kekCheck(kek), check) else {
            throw KeyRingError(
                .wrongMasterKey,
                masterKey == nil
                    ? "\(KeyRing.masterKeyPath(keysDirectory)) is not the master key of this database"
                    : "this master key does not open the keyring of this database")
        }
        let secret = try unwrap(wrappedSecret, kek: kek, label: fingerprintLabel)
        let keyRing = DatabaseKeyRing(
            keysDirectory: keysDirectory, state: State(kek: kek), secret: secret, policy: policy, clock: clock)
        try keyRing.reload(on: connection)
        return keyRing
    }

    static func hexBytes(_ text: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count / 2)
        var high: UInt8?
        for character in text.utf8 {
            let nibble: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = character - UInt8(ascii: "a") + 10
            default: return nil
            }
            if let value = high {
                bytes.append(value << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return high == nil ? bytes : nil
    }

    static let generationStatement = PostgresStatement(
        name: "cv_key_generation", sql: "SELECT generation FROM cardvault_keyring")
    static let keysStatement = PostgresStatement(
        name: "cv_keys",
        sql: """
            SELECT r.current_version, r.generation, r.kek_check, k.version, k.created, k.wrapped, k.seals
            FROM cardvault_keyring r CROSS JOIN cardvault_data_keys k ORDER BY k.version
            """)

    /// The keyring's generation (bumped by every key change).
    var generation: Int64 { state.withLock { $0.generation } }

    /// Reads the keyring again; unwraps versions it did not know, drops retired ones.
    func reload(on connection: PostgresConnection) throws {
        try connection.prepare(Self.keysStatement.name, Self.keysStatement.sql)
        try apply(try connection.run(Self.keysStatement.name, []))
    }

    /// Applies the rows of ``keysStatement``.
    func apply(_ rows: PostgresRows) throws {
        guard !rows.rows.isEmpty, let current = rows.int64(0, 0), let generation = rows.int64(0, 1) else {
            throw KeyRingError(.damaged, "the database keyring holds no data key")
        }
        try state.withLock { state in
            if state.generation == generation && !state.keys.isEmpty { return }
            guard let check = rows.bytes(0, 2), ConstantTime.equals(try Self.kekCheck(state.kek), check) else {
                throw KeyRingError(
                    .wrongMasterKey,
                    "the database keyring is under another master key now (rotated on another host); restart this "
                        + "daemon and unseal it with the new shares (or give it the new master.key in development)")
            }
            var keys: [UInt32: SymmetricKey] = [:]
            var infos: [DataKeyInfo] = []
            for row in rows.rows.indices {
                guard let versionValue = rows.int64(row, 3), let created = rows.int64(row, 4),
                    let seals = rows.int64(row, 6),
                    let version = UInt32(exactly: versionValue)
                else { continue }
                let wrapped = rows.bytes(row, 5)
                if let wrapped {
                    keys[version] =
                        try state.keys[version] ?? Self.unwrap(wrapped, kek: state.kek, label: Self.dekLabel(version))
                }
                infos.append(
                    DataKeyInfo(
                        version: version, created: Date(timeIntervalSince1970: TimeInterval(created)),
                        retired: wrapped == nil,
                        seals: UInt64(max(0, seals))))
            }
            guard let currentVersion = UInt32(exactly: current), keys[currentVersion] != nil else {
                throw KeyRingError(.damaged, "the database keyring's current data key is missing")
            }
            state.keys = keys
            state.infos = infos
            state.current = currentVersion
            state.generation = generation
            state.unused = state.unused.filter { keys[$0.key] != nil }
        }
    }

    /// The current data key version.
    public var currentVersion: UInt32 { state.withLock { $0.current } }

    /// Every data key version, oldest first, with the seals reserved under it (an upper bound).
    public var dataKeys: [DataKeyInfo] { state.withLock { $0.infos } }

    /// The key of `version`, or nil when unknown or retired.
    func key(version: UInt32) -> SymmetricKey? { state.withLock { $0.keys[version] } }

    /// What ``reserveSeals(_:pool:logger:)`` needs from the database, if anything.
    private enum Need {
        /// Granted from this daemon's share; `refill`: the share fell under a quarter block and this caller starts
        /// the next block's reservation in the background.
        case granted(version: UInt32, key: SymmetricKey, refill: Bool)
        /// The share is used up: this caller reserves the next block (the others wait for it).
        case reserve(version: UInt32)
        /// Another caller's reservation is under way.
        case wait
        case rotate(version: UInt32, reason: AutomaticRotationReason)
    }

    /// Grants `count` seals under the current version, reserving a block in the database when this
    /// daemon's share is used up, and replacing the version when it reaches its seal or age limit.
    ///
    /// One reservation at a time per daemon: callers that find the share used up while one is under way wait for
    /// it instead of each reserving a block (each an `UPDATE` of the version's row and a WAL flush, taken in turn
    /// on that row). And the next block is reserved ahead, in the background, once the share falls under a quarter
    /// of a block, so that a busy daemon's writes seldom wait for one at all.
    func reserveSeals(
        _ count: Int, pool: PostgresPool, logger: Logger
    ) async throws -> (version: UInt32, key: SymmetricKey) {
        let wanted = UInt64(max(count, 0))
        guard wanted <= policy.maximumSeals else {
            throw KeyRingError(
                .sealLimit, "\(wanted) seals at once exceed the limit of \(policy.maximumSeals) per data key")
        }
        let block = max(min(policy.reservationBlock, policy.maximumSeals), wanted)
        var attempts = 0
        while attempts < 8 {
            let now = clock.now
            let need = state.withLock { state -> Need in
                let version = state.current
                let info = state.infos.first { $0.version == version }
                if let age = policy.maximumAge, let info, now.timeIntervalSince(info.created) >= age {
                    return .rotate(version: version, reason: .age)
                }
                let unused = state.unused[version] ?? 0
                if unused >= wanted, let key = state.keys[version] {
                    state.unused[version] = unused - wanted
                    let refill = !state.reserving && unused - wanted < block / 4
                    if refill { state.reserving = true }
                    return .granted(version: version, key: key, refill: refill)
                }
                if state.reserving { return .wait }
                state.reserving = true
                return .reserve(version: version)
            }
            switch need {
            case .granted(let version, let key, let refill):
                if refill {
                    Task { [self] in
                        do {
                            _ = try await reserveBlock(block, version: version, pool: pool)
                            finishReserving(failure: nil)
                        } catch {
                            finishReserving(failure: error)
                        }
                    }
                }
                return (version, key)
            case .wait:
                // A failed reservation fails its waiters too (the database is down or refusing: they would fail
                // the same way, one after another).
                let failure = await withUnsafeContinuation { (waiter: UnsafeContinuation<(any Error)?, Never>) in
                    let waiting = state.withLock { state -> Bool in
                        guard state.reserving else { return false }
                        state.reservationWaiters.append(waiter)
                        return true
                    }
                    if !waiting { waiter.resume(returning: nil) }
                }
                if let failure { throw failure }
            case .rotate(let version, let reason):
                attempts += 1
                try await self.rotate(pool: pool, expectedCurrent: version, reason: reason, logger: logger)
            case .reserve(let version):
                attempts += 1
                let reserved: Bool
                do {
                    reserved = try await reserveBlock(block, version: version, pool: pool)
                    finishReserving(failure: nil)
                } catch {
                    finishReserving(failure: error)
                    throw error
                }
                if !reserved {
                    // The version is full (or retired, or replaced): a new one takes over.
                    try await self.rotate(pool: pool, expectedCurrent: version, reason: .seals, logger: logger)
                }
            }
        }
        throw StoreError(.unavailable, "cannot reserve seals under the current data key")
    }

    /// Reserves `block` seals of `version` in the database and adds them to this daemon's share; false when the
    /// version cannot take them (full, retired or replaced).
    private func reserveBlock(_ block: UInt64, version: UInt32, pool: PostgresPool) async throws -> Bool {
        let policy = policy
        let rows = try await pool.session { connection in
            try connection.prepare(
                "cv_reserve",
                """
                UPDATE cardvault_data_keys SET seals = seals + $2
                WHERE version = $1 AND wrapped IS NOT NULL AND seals + $2 <= $3 RETURNING seals
                """)
            return try connection.run(
                "cv_reserve",
                [.int32(Int32(bitPattern: version)), .int64(Int64(block)), .int64(Int64(policy.maximumSeals))])
        }
        guard !rows.rows.isEmpty else { return false }
        state.withLock { state in
            state.unused[version, default: 0] += block
            if let index = state.infos.firstIndex(where: { $0.version == version }), let seals = rows.int64(0, 0) {
                state.infos[index].seals = UInt64(max(0, seals))
            }
        }
        return true
    }

    /// Ends the reservation under way and wakes the callers waiting for it, with its error if it failed.
    private func finishReserving(failure: (any Error)?) {
        let waiters = state.withLock { state -> [UnsafeContinuation<(any Error)?, Never>] in
            state.reserving = false
            defer { state.reservationWaiters = [] }
            return state.reservationWaiters
        }
        for waiter in waiters { waiter.resume(returning: failure) }
    }

    /// Gives back the seals reserved and unused (on close), so the counts stay close to the seals made.
    func releaseUnusedSeals(on connection: PostgresConnection) {
        let unused = state.withLock { state -> [UInt32: UInt64] in
            defer { state.unused = [:] }
            return state.unused
        }
        for (version, count) in unused where count > 0 {
            _ = try? connection.execute(
                "UPDATE cardvault_data_keys SET seals = greatest(0, seals - \(count)) WHERE version = \(version)")
        }
    }

    /// Reloads the keyring through the pool.
    func refresh(pool: PostgresPool) async throws {
        try apply(try await pool.run(Self.keysStatement, []))
    }

    /// Adds a data key version and makes it current, unless `expectedCurrent` is given and no longer current
    /// (another daemon rotated first). Every daemon sees it on its next write (``cardvault_commit`` refuses
    /// seals under the old version) or within the refresh interval.
    @discardableResult
    func rotate(
        pool: PostgresPool, expectedCurrent: UInt32? = nil, reason: AutomaticRotationReason? = nil, logger: Logger
    ) async throws -> DataKeyInfo {
        let kek = state.withLock { $0.kek }
        let kekCheck = try Self.kekCheck(kek)
        let created = Int64(clock.now.timeIntervalSince1970)
        let dek = SymmetricKey.random()
        let rows = try await pool.session { connection in
            try connection.execute("BEGIN")
            do {
                try connection.execute("SELECT pg_advisory_xact_lock(\(PostgresSchema.keyLock))")
                let ring = try connection.execute(
                    "SELECT current_version, encode(kek_check, 'hex') FROM cardvault_keyring FOR UPDATE")
                guard let currentText = ring.text(0, 0), let current = UInt32(currentText) else {
                    throw KeyRingError(.damaged, "the database keyring cannot be read")
                }
                guard ring.text(0, 1).flatMap(Self.hexBytes) == kekCheck else {
                    throw KeyRingError(.wrongMasterKey, "the database keyring is under another master key")
                }
                if let expectedCurrent, expectedCurrent != current {
                    try connection.execute("COMMIT")
                    return PostgresRows(rows: [], affected: 0)
                }
                let top = try connection.execute("SELECT max(version) FROM cardvault_data_keys")
                let version = (top.text(0, 0).flatMap { UInt32($0) } ?? 0) + 1
                let wrapped = try Self.wrap(dek, kek: kek, label: Self.dekLabel(version))
                try connection.prepare(
                    "cv_add_key", "INSERT INTO cardvault_data_keys (version, created, wrapped) VALUES ($1, $2, $3)")
                _ = try connection.run(
                    "cv_add_key", [.int32(Int32(bitPattern: version)), .int64(created), .bytes(wrapped)])
                try connection.execute(
                    "UPDATE cardvault_keyring SET current_version = \(version), generation = generation + 1")
                try connection.execute("COMMIT")
                return PostgresRows(rows: [[PostgresValue.bigEndian(Int64(version))]], affected: 1)
            } catch {
                _ = try? connection.execute("ROLLBACK")
                throw error
            }
        }
        try await refresh(pool: pool)
        guard let added = rows.int64(0, 0).flatMap({ UInt32(exactly: $0) }) else {
            let current = currentVersion
            return dataKeys.first { $0.version == current }!
        }
        let info =
            dataKeys.first { $0.version == added }
            ?? DataKeyInfo(
                version: added, created: Date(timeIntervalSince1970: TimeInterval(created)), retired: false)
        if let reason {
            logger.notice(
                "data key rotated automatically",
                [
                    "reason": .string(reason.rawValue), "version": .int(Int(added)),
                    "sealLimit": .int(Int(policy.maximumSeals)),
                ])
        } else {
            logger.notice("data key rotated", ["version": .int(Int(added))])
        }
        return info
    }

    /// Drops the key material of `version` from the database, refused for the current version and while any
    /// record is sealed under it.
    ///
    /// The records are counted before the exclusive key lock is taken, not under it: the count reads the table
    /// whole (no index on `key_version` since schema version 3), and every write waits for that lock. Counting
    /// first is as safe. A write commits under the current version only (checked in its own statement, under the
    /// key lock shared), a rotation waits for the writes in flight, and a version that is no longer current never
    /// becomes current again (new versions are numbered above every existing one). Once `version` is seen not
    /// current, the records sealed under it can only become fewer, so none is written under it after a count of 0.
    func retire(version: UInt32, pool: PostgresPool) async throws {
        try await Self.checkRetirable(version: version, pool: pool)
        _ = try await pool.session { connection in
            try connection.execute("BEGIN")
            do {
                try connection.execute("SELECT pg_advisory_xact_lock(\(PostgresSchema.keyLock))")
                let ring = try connection.execute("SELECT current_version FROM cardvault_keyring FOR UPDATE")
                let current = ring.text(0, 0).flatMap { UInt32($0) }
                let key = try connection.execute(
                    "SELECT 1 FROM cardvault_data_keys WHERE version = \(version) AND wrapped IS NOT NULL")
                guard !key.rows.isEmpty else {
                    throw KeyRingError(.unknownVersion, "data key version \(version) does not exist or is retired")
                }
                guard current != version else {
                    throw KeyRingError(.versionInUse, "data key version \(version) is the current one; rotate first")
                }
                try connection.execute("UPDATE cardvault_data_keys SET wrapped = NULL WHERE version = \(version)")
                try connection.execute("UPDATE cardvault_keyring SET generation = generation + 1")
                try connection.execute("COMMIT")
                return PostgresRows(rows: [], affected: 0)
            } catch {
                _ = try? connection.execute("ROLLBACK")
                throw error
            }
        }
        try await refresh(pool: pool)
    }

    /// Throws unless `version` exists, is not retired, is not the current version and seals no record.
    private static func checkRetirable(version: UInt32, pool: PostgresPool) async throws {
        _ = try await pool.session { connection in
            let key = try connection.execute(
                """
                SELECT k.version = r.current_version FROM cardvault_data_keys k, cardvault_keyring r
                WHERE k.version = \(version) AND k.wrapped IS NOT NULL
                """)
            guard let isCurrent = key.text(0, 0) else {
                throw KeyRingError(.unknownVersion, "data key version \(version) does not exist or is retired")
            }
            guard isCurrent == "f" else {
                throw KeyRingError(.versionInUse, "data key version \(version) is the current one; rotate first")
            }
            let used = try connection.execute("SELECT count(*) FROM cardvault_records WHERE key_version = \(version)")
            let inUse = used.text(0, 0).flatMap { Int($0) } ?? 0
            guard inUse == 0 else {
                throw KeyRingError(
                    .versionInUse,
                    "\(inUse) records still use data key version \(version); run `cardvault keys rewrap` first")
            }
            return PostgresRows(rows: [], affected: 0)
        }
    }

    /// Re-wraps every live data key and the fingerprint secret under a new master key, in one transaction. With
    /// `replacement` nil (file custody) a fresh key replaces this host's `master.key` (written to `master.key.next`
    /// first; the old file is overwritten and unlinked); other hosts of a file custody need the new file. With a
    /// replacement (shares, an HSM) nothing is written outside the database.
    func rotateMaster(
        pool: PostgresPool, to replacement: (any KeyEncryptionKey)?, random: RandomPool = .shared
    ) async throws {
        let masterPath = KeyRing.masterKeyPath(keysDirectory)
        let nextPath = masterPath + ".next"
        let next: any KeyEncryptionKey
        if let replacement {
            next = replacement
        } else {
            let material = SecureBytes(count: KeyFile.masterKeySize) { random.fill($0) }
            try material.withUnsafeBytes { try KeyFile.writeAtomically(nextPath, $0) }
            next = MemoryKeyEncryptionKey(SymmetricKey(material))
        }
        let (old, keys) = state.withLock { ($0.kek, $0.keys) }
        let nextCheck = try Self.kekCheck(next)
        let oldCheck = try Self.kekCheck(old)
        let rewrapped: [(UInt32, [UInt8])] = try keys.sorted(by: { $0.key < $1.key }).map { version, key in
            (version, try Self.wrap(key, kek: next, label: Self.dekLabel(version)))
        }
        _ = try await pool.session { connection in
            try connection.execute("BEGIN")
            do {
                try connection.execute("SELECT pg_advisory_xact_lock(\(PostgresSchema.keyLock))")
                let ring = try connection.execute(
                    "SELECT encode(kek_check, 'hex'), encode(fingerprint_secret, 'hex') FROM cardvault_keyring FOR UPDATE"
                )
                guard ring.text(0, 0).flatMap(Self.hexBytes) == oldCheck,
                    let wrappedSecret = ring.text(0, 1).flatMap(Self.hexBytes)
                else { throw KeyRingError(.wrongMasterKey, "the database keyring is under another master key") }
                let plainSecret = try Self.unwrap(wrappedSecret, kek: old, label: Self.fingerprintLabel)
                let live = try connection.execute("SELECT version FROM cardvault_data_keys WHERE wrapped IS NOT NULL")
                let liveVersions = Set(live.rows.indices.compactMap { live.text($0, 0).flatMap { UInt32($0) } })
                guard liveVersions.isSubset(of: Set(rewrapped.map(\.0))) else {
                    throw KeyRingError(.versionInUse, "the keyring changed meanwhile; run the master rotation again")
                }
                try connection.prepare(
                    "cv_rewrap_key",
                    "UPDATE cardvault_data_keys SET wrapped = $2 WHERE version = $1 AND wrapped IS NOT NULL")
                for (version, wrapped) in rewrapped {
                    _ = try connection.run("cv_rewrap_key", [.int32(Int32(bitPattern: version)), .bytes(wrapped)])
                }
                try connection.prepare(
                    "cv_rewrap_ring",
                    "UPDATE cardvault_keyring SET kek_check = $1, fingerprint_secret = $2, generation = generation + 1")
                _ = try connection.run(
                    "cv_rewrap_ring",
                    [.bytes(nextCheck), .bytes(try Self.wrap(plainSecret, kek: next, label: Self.fingerprintLabel))])
                try connection.execute("COMMIT")
                return PostgresRows(rows: [], affected: 0)
            } catch {
                _ = try? connection.execute("ROLLBACK")
                throw error
            }
        }
        if replacement == nil {
            try KeyFile.destroy(masterPath)
            try KeyFile.replace(nextPath, with: masterPath)
        }
        state.withLock { $0.kek = next }
        try await refresh(pool: pool)
    }
}
