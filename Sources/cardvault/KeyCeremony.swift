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
        try refuseWhileServing(access)
        let keys = access.keysDirectory
        for path in [KeyRing.masterKeyPath(keys), KeyCustody.path(keys)] where FileManager.default.fileExists(atPath: path)
        {
            throw CommandFailure("\(path) exists: this vault has a master key already (see `cardvault keys seal`)")
        }
        try KeyRing.createKeysDirectory(keys)
        let split = MasterKeySplit.fresh(threshold: threshold, count: count)
        do {
            if let configuration = access.configuration {
                var options = StoreBackend.databaseOptions(configuration, logger: .disabled)
                options.masterKey = split.masterKey
                let store = try PostgresRecordStore.open(options: options, keysDirectory: keys)
                store.close()
            } else {
                let ring = (access.dataDirectory as NSString).appendingPathComponent(KeyRing.keyRingFileName)
                guard !FileManager.default.fileExists(atPath: ring) else {
                    throw CommandFailure("\(ring) exists: this data directory has a keyring already")
                }
                var options = FileStoreOptions()
                options.masterKey = split.masterKey
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
        try split.custody.write(keysDirectory: keys)
        try CustodyAuditLog(dataDirectory: access.dataDirectory).record(
            "keys.init", caller: .inProcess, ["threshold": .int(threshold), "shares": .int(count)])
        return CustodyAdminCommands.describe(split)
    }

    /// Moves a key-file install to shares custody: rewraps the keyring under a new master key, then destroys the
    /// key file (and the backups older versions made of it).
    static func seal(_ access: StoreAccess, threshold: Int, count: Int) async throws -> AdminValue {
        try refuseWhileServing(access)
        let keys = access.keysDirectory
        if let custody = try KeyCustody.read(keysDirectory: keys), custody.provider != .file {
            throw CommandFailure("this vault is in \(custody.provider.rawValue) custody already")
        }
        let split = MasterKeySplit.fresh(threshold: threshold, count: count)
        do {
            if let configuration = access.configuration {
                let backend = try StoreBackend.database(configuration, logger: .disabled, leads: false)
                defer { backend.close() }
                try await backend.rotateMaster(split.masterKey)
            } else {
                var options = FileStoreOptions()
                options.keyRotation = access.keyRotation
                let store = try EncryptedFileStore.open(
                    directory: access.dataDirectory, keysDirectory: keys, options: options)
                defer { store.close() }
                try store.rotateMasterKey(to: split.masterKey)
            }
        } catch let error as KeyRingError {
            throw CommandFailure("cannot seal: \(error.message)")
        } catch let error as StoreError {
            throw CommandFailure("cannot seal: \(error.message)")
        }
        try split.custody.write(keysDirectory: keys)
        let master = KeyRing.masterKeyPath(keys)
        let leftovers = ((try? FileManager.default.contentsOfDirectory(atPath: keys)) ?? []).filter {
            $0 == KeyRing.masterKeyFileName || $0.hasPrefix(KeyRing.masterKeyFileName + ".")
        }
        for name in leftovers { try KeyFile.destroy((keys as NSString).appendingPathComponent(name)) }
        _ = master
        try CustodyAuditLog(dataDirectory: access.dataDirectory).record(
            "keys.seal", caller: .inProcess,
            ["threshold": .int(threshold), "shares": .int(count), "keyFilesDestroyed": .int(leftovers.count)])
        return CustodyAdminCommands.describe(split)
    }

    /// Ceremonies change the files under a daemon's feet: refused while one serves this data directory.
    private static func refuseWhileServing(_ access: StoreAccess) throws {
        if AdminClient.isServing(path: StoreAdminCommands.socketPath(dataDirectory: access.dataDirectory)) {
            throw CommandFailure("a daemon is running on \(access.dataDirectory): stop it first")
        }
    }
}
