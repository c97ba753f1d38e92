import Foundation
import Payments
import VaultAPI
import VaultCore
import VaultCrypto
import VaultStore
import VaultStorePostgres

/// The record store of the daemon or of an admin command: the encrypted file store in the data
/// directory, or PostgreSQL when `databaseURL` is set (shared by every daemon; the data directory then
/// holds only the admin socket).
final class StoreBackend: Sendable {
    let store: any RecordStore
    let fingerprintKeys: any FingerprintKeySource
    /// Which daemon runs each background job (always this one on the file store).
    let leadership: any Leadership
    private let closeStore: @Sendable () -> Void
    private let metrics: @Sendable () -> String
    private let registerCommands: @Sendable (AdminHandlers) -> Void
    let isDatabase: Bool

    private init(
        store: any RecordStore, fingerprintKeys: any FingerprintKeySource, leadership: any Leadership, isDatabase: Bool,
        close: @escaping @Sendable () -> Void, metrics: @escaping @Sendable () -> String,
        register: @escaping @Sendable (AdminHandlers) -> Void
    ) {
        self.store = store
        self.fingerprintKeys = fingerprintKeys
        self.leadership = leadership
        self.isDatabase = isDatabase
        self.closeStore = close
        self.metrics = metrics
        self.registerCommands = register
    }

    func close() { closeStore() }
    func keyMetricsText() -> String { metrics() }
    /// Registers the store's admin commands (`keys.*`, `store.*`).
    func registerAdminCommands(in handlers: AdminHandlers) { registerCommands(handlers) }

    static func file(_ store: EncryptedFileStore) -> StoreBackend {
        StoreBackend(
            store: store, fingerprintKeys: store.fingerprintKeys, leadership: SoleLeadership(), isDatabase: false,
            close: { store.close() }, metrics: { store.keyMetricsText() },
            register: { StoreAdminCommands.register(store, in: $0) })
    }

    /// The PostgreSQL options of `configuration` (its `databaseURL` must be set).
    static func databaseOptions(_ configuration: CardVaultConfiguration, logger: Logger) -> PostgresStoreOptions {
        PostgresStoreOptions(
            uri: configuration.databaseURL?.unsafeRevealed ?? "", poolSize: configuration.database.poolSize,
            synchronousCommit: configuration.database.synchronousCommit, keyRotation: configuration.keys.rotationPolicy,
            logger: logger)
    }

    /// Opens the PostgreSQL store of `configuration`; `leads` adds advisory-lock leadership (the daemon).
    static func database(_ configuration: CardVaultConfiguration, logger: Logger, leads: Bool) throws -> StoreBackend {
        let options = databaseOptions(configuration, logger: logger)
        let store: PostgresRecordStore
        do {
            store = try PostgresRecordStore.open(options: options, keysDirectory: configuration.keysDirectory)
        } catch let error as PostgresError {
            throw CommandFailure("cannot open the PostgreSQL store: \(error.message)", status: error.code == .schema ? 78 : 1)
        } catch let error as KeyRingError {
            throw CommandFailure("cannot open the keys: \(error.message)")
        }
        let leadership: any Leadership
        let close: @Sendable () -> Void
        if leads {
            let advisory = AdvisoryLockLeadership(options: options)
            leadership = advisory
            close = {
                advisory.close()
                store.close()
            }
        } else {
            leadership = SoleLeadership()
            close = { store.close() }
        }
        return StoreBackend(
            store: store, fingerprintKeys: store.fingerprintKeys, leadership: leadership, isDatabase: true, close: close,
            metrics: { store.keyMetricsText() }, register: { PostgresAdminCommands.register(store, in: $0) })
    }
}
