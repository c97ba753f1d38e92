import CardVaultApp
import Configuration
import VaultCore
import VaultCrypto
import VaultStore
import VaultStorePostgres

/// Opens the PostgreSQL backend (`databaseURL`) for the daemon or an admin command: records and data keys live
/// in the database shared by every daemon; the data directory then holds only the admin socket.
enum StoreBackend {
    /// Where the custody record of `configuration`'s install lives: the database every daemon shares, or the keys
    /// directory (`keysDirectory`, default the configuration's).
    static func custodyRecords(
        _ configuration: CardVaultConfiguration?, keysDirectory: String? = nil
    ) -> any CustodyRecords {
        if let uri = configuration?.databaseURL?.unsafeRevealed { return PostgresCustodyRecords(uri: uri) }
        return CustodyFile(keysDirectory: keysDirectory ?? configuration?.keysDirectory ?? "keys")
    }

    /// The PostgreSQL options of `configuration` (its `databaseURL` must be set).
    static func databaseOptions(_ configuration: CardVaultConfiguration, logger: Logger) -> PostgresStoreOptions {
        PostgresStoreOptions(
            uri: configuration.databaseURL?.unsafeRevealed ?? "", poolSize: configuration.database.poolSize,
            synchronousCommit: configuration.database.synchronousCommit, keyRotation: configuration.keys.rotationPolicy,
            logger: logger)
    }

    /// Opens the PostgreSQL store of `configuration`; `leads` adds advisory-lock leadership (the daemon).
    /// `masterKey`: the master key rebuilt from shares; nil reads the development key file.
    static func database(
        _ configuration: CardVaultConfiguration, masterKey: (any KeyEncryptionKey)? = nil, logger: Logger, leads: Bool
    ) throws -> DaemonStore {
        var options = databaseOptions(configuration, logger: logger)
        options.masterKey = masterKey
        let store: PostgresRecordStore
        do {
            store = try PostgresRecordStore.open(options: options, keysDirectory: configuration.keysDirectory)
        } catch let error as PostgresError {
            throw CommandFailure(
                "cannot open the PostgreSQL store: \(error.message)", status: error.code == .schema ? 78 : 1)
        } catch let error as KeyRingError where masterKey != nil && error.code == .wrongMasterKey {
            throw error  // the unsealer tries the next candidate key
        } catch let error as KeyRingError {
            throw CommandFailure("cannot open the keys: \(error.message)")
        }
        let leadership: any Leadership
        let close: @Sendable () -> Void
        var metricsText: @Sendable () -> String = { store.keyMetricsText() + store.storeMetricsText() }
        if leads {
            let advisory = AdvisoryLockLeadership(options: options)
            leadership = advisory
            metricsText = { store.keyMetricsText() + store.storeMetricsText() + advisory.metricsText() }
            close = {
                advisory.close()
                store.close()
            }
        } else {
            leadership = SoleLeadership()
            close = { store.close() }
        }
        return DaemonStore(
            store: store, fingerprintKeys: store.fingerprintKeys, leadership: leadership,
            keyMetricsText: metricsText, rotateMaster: { try await store.rotateMasterKey(to: $0) },
            registerAdminCommands: { PostgresAdminCommands.register(store, in: $0) }, close: close)
    }
}
