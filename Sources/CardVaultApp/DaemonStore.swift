public import AdminChannel
public import VaultCore
public import VaultCrypto
public import VaultStore

/// The opened record store the daemon serves from, whichever backend holds it: the encrypted file store, or
/// PostgreSQL shared by several daemons (built by the `cardvault` executable, which links that backend).
public struct DaemonStore: Sendable {
    public let store: any RecordStore
    public let fingerprintKeys: any FingerprintKeySource
    /// Which daemon runs each background job (this one alone on the file store).
    public let leadership: any Leadership
    /// Prometheus text about the data keys.
    public let keyMetricsText: @Sendable () -> String
    /// Registers the store's admin commands (`keys.*`, `store.*`).
    public let registerAdminCommands: @Sendable (AdminHandlers) -> Void
    /// Closes the store (after every service stopped).
    public let close: @Sendable () -> Void
    /// Rewraps every data key under a new master key (shares or HSM custody).
    public let rotateMaster: @Sendable (any KeyEncryptionKey) async throws -> Void

    public init(
        store: any RecordStore, fingerprintKeys: any FingerprintKeySource, leadership: any Leadership,
        keyMetricsText: @escaping @Sendable () -> String,
        rotateMaster: @escaping @Sendable (any KeyEncryptionKey) async throws -> Void,
        registerAdminCommands: @escaping @Sendable (AdminHandlers) -> Void,
        close: @escaping @Sendable () -> Void
    ) {
        self.store = store
        self.fingerprintKeys = fingerprintKeys
        self.leadership = leadership
        self.keyMetricsText = keyMetricsText
        self.rotateMaster = rotateMaster
        self.registerAdminCommands = registerAdminCommands
        self.close = close
    }

    /// The encrypted file store of one data directory.
    public static func file(_ store: EncryptedFileStore) -> DaemonStore {
        DaemonStore(
            store: store, fingerprintKeys: store.fingerprintKeys, leadership: SoleLeadership(),
            keyMetricsText: { store.keyMetricsText() + store.storeMetricsText() },
            rotateMaster: { try store.rotateMasterKey(to: $0) },
            registerAdminCommands: { StoreAdminCommands.register(store, in: $0) },
            close: { store.close() })
    }
}
