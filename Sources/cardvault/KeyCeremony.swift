import AdminChannel
import CardVaultApp
import Configuration
import Foundation
import VaultCore
import VaultCrypto
import VaultStore
import VaultStorePostgres

/// The key ceremonies that run without a daemon: `keys init --shares` (a new sealed vault) and `keys seal` (a
/// key-file install made sealed). Each makes a master key in locked memory, wraps the keyring under it, records
/// the custody (never the key) and answers the shares once.
enum KeyCeremony {
    /// Creates a new vault's master key as shares and its keyring (in the data directory, or in PostgreSQL).
    static func initialize(_ access: StoreAccess, threshold: Int, count: Int) throws -> AdminValue {
        try refuseExisting(access)
        let split = try MasterKeySplit.fresh(threshold: threshold, count: count)
        try initialize(access, masterKey: split.masterKey, custody: split.custody)
        return CustodyAdminCommands.describe(split)
    }

    /// Creates a new vault's master key inside the configured PKCS#11 token, and its keyring.
    static func initializeHSM(_ access: StoreAccess, configuration: CardVaultConfiguration) throws {
        try refuseExisting(access)
        let key = try HSMCustody.open(configuration, create: true)
        try initialize(access, masterKey: key, custody: KeyCustody(provider: .pkcs11))
    }

    private static func refuseExisting(_ access: StoreAccess) throws {
        try refuseWhileServing(access)
        let keys = access.keysDirectory
        for path in [KeyRing.masterKeyPath(keys), KeyCustody.path(keys)]
        where FileManager.default.fileExists(atPath: path) {
            throw CommandFailure("\(path) exists: this vault has a master key already (see `cardvault keys seal`)")
        }
        if access.configuration != nil, let recorded = try access.custodyRecords.read() {
            throw CommandFailure("the database records \(recorded.provider.rawValue) custody already")
        }
    }

    private static func initialize(
        _ access: StoreAccess, masterKey: any KeyEncryptionKey, custody: KeyCustody
    ) throws {
        let keys = access.keysDirectory
        try KeyRing.createKeysDirectory(keys)
        do {
            if let configuration = access.configuration {
                var options = StoreBackend.databaseOptions(configuration, logger: .disabled)
                options.masterKey = masterKey
                let store = try PostgresRecordStore.open(options: options, keysDirectory: keys)
                store.close()
            } else {
                let ring = (access.dataDirectory as NSString).appendingPathComponent(KeyRing.keyRingFileName)
                guard !FileManager.default.fileExists(atPath: ring) else {
                    throw CommandFailure("\(ring) exists: this data directory has a keyring already")
                }
                var options = FileStoreOptions()
                options.masterKey = masterKey
                let store = try EncryptedFileStore.open(
                    directory: access.dataDirectory, keysDirectory: keys, options: options)
                store.close()
            }
        } catch let error as KeyRingError where error.code == .wrongMasterKey {
            throw CommandFailure("the database has a keyring already, under another master key")
        } catch let error as KeyRingError {
            throw CommandFailure("cannot create the keyring: \(error.message)")
        } catch let error as StoreError {
            throw CommandFailure("cannot create the keyring: \(error.message)")
        } catch let error as PostgresError {
            throw CommandFailure("cannot create the keyring: \(error.message)")
        }
        try access.custodyRecords.write(custody)
        try CustodyAuditLog(dataDirectory: access.dataDirectory).record(
            "keys.init", caller: .inProcess,
            [
                "provider": .string(custody.provider.rawValue),
                "threshold": custody.threshold.map { .int($0) } ?? .null,
                "shares": custody.shares.map { .int($0) } ?? .null,
            ])
    }

    /// Moves a key-file install to shares custody: rewraps the keyring under a new master key, then destroys the
    /// key file (and the backups older versions made of it).
    /// `show` gets the new shares before anything is written.
    static func seal(
        _ access: StoreAccess, threshold: Int, count: Int, show: (AdminValue) -> Void
    ) async throws {
        let split = try MasterKeySplit.fresh(threshold: threshold, count: count)
        let old: SecureBytes
        do {
            old = try KeyFile.readSecret(KeyRing.masterKeyPath(access.keysDirectory))
        } catch let error as KeyRingError {
            throw CommandFailure("cannot seal: \(error.message)")
        }
        try refuseWhileServing(access)
        if let recorded = try access.custodyRecords.read(), recorded.provider != .file,
            recorded.previousWrappedMaster == nil
        {
            throw CommandFailure("this vault is in \(recorded.provider.rawValue) custody already")
        }
        show(CustodyAdminCommands.describe(split))
        // The record that opens both keys first: a crash before the keyring is rewrapped loses nothing.
        try access.custodyRecords.write(try split.keeping(previous: old).custody)
        try await seal(access, masterKey: split.masterKey, custody: split.custody)
    }

    /// Moves a key-file install into the configured PKCS#11 token: a new key made inside it wraps the keyring.
    static func sealHSM(_ access: StoreAccess, configuration: CardVaultConfiguration) async throws {
        let key = try HSMCustody.open(configuration, create: true)
        try await seal(access, masterKey: key, custody: KeyCustody(provider: .pkcs11))
    }

    private static func seal(_ access: StoreAccess, masterKey: any KeyEncryptionKey, custody: KeyCustody) async throws {
        try refuseWhileServing(access)
        let keys = access.keysDirectory
        if custody.provider == .pkcs11, let recorded = try access.custodyRecords.read(), recorded.provider != .file {
            throw CommandFailure("this vault is in \(recorded.provider.rawValue) custody already")
        }
        do {
            if let configuration = access.configuration {
                let backend = try StoreBackend.database(configuration, logger: .disabled, leads: false)
                defer { backend.close() }
                try await backend.rotateMaster(masterKey)
            } else {
                var options = FileStoreOptions()
                options.keyRotation = access.keyRotation
                let store = try EncryptedFileStore.open(
                    directory: access.dataDirectory, keysDirectory: keys, options: options)
                defer { store.close() }
                try store.rotateMasterKey(to: masterKey)
            }
        } catch let error as KeyRingError {
            throw CommandFailure("cannot seal: \(error.message)")
        } catch let error as StoreError {
            throw CommandFailure("cannot seal: \(error.message)")
        }
        try access.custodyRecords.write(custody)
        let leftovers = ((try? FileManager.default.contentsOfDirectory(atPath: keys)) ?? []).filter {
            $0 == KeyRing.masterKeyFileName || $0.hasPrefix(KeyRing.masterKeyFileName + ".")
        }
        for name in leftovers { try KeyFile.destroy((keys as NSString).appendingPathComponent(name)) }
        try CustodyAuditLog(dataDirectory: access.dataDirectory).record(
            "keys.seal", caller: .inProcess,
            [
                "provider": .string(custody.provider.rawValue),
                "threshold": custody.threshold.map { .int($0) } ?? .null,
                "shares": custody.shares.map { .int($0) } ?? .null, "keyFilesDestroyed": .int(leftovers.count),
            ])
    }

    /// Ceremonies change the files under a daemon's feet: refused while one serves this data directory.
    private static func refuseWhileServing(_ access: StoreAccess) throws {
        if AdminClient.isServing(path: StoreAdminCommands.socketPath(dataDirectory: access.dataDirectory)) {
            throw CommandFailure("a daemon is running on \(access.dataDirectory): stop it first")
        }
    }
}
