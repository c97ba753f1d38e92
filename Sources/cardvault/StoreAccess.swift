import AdminChannel
import CardVaultApp
import Configuration
import Foundation
import Payments
import VaultCore
import VaultCrypto
import VaultStore

/// How a command reaches the store: the running daemon's admin socket, or the files directly.
struct StoreAccess {
    var dataDirectory: String
    var keysDirectory: String
    /// The rotation limits the files are opened with when no daemon runs (the configuration's).
    var keyRotation = KeyRotationPolicy()
    /// When set (`databaseURL`), commands work on PostgreSQL directly: no daemon socket is needed and no
    /// lock is taken (every daemon shares the database).
    var configuration: CardVaultConfiguration?

    /// Takes `--config`, `--data-dir` and `--keys-dir`; the directories not given come from the
    /// configuration the daemon reads (file, then `CARDVAULT_DATA_DIR` and `CARDVAULT_KEYS_DIR`).
    static func parse(_ arguments: inout Arguments) throws -> StoreAccess {
        let explicitFile = try arguments.option("--config")
        let data = try arguments.option("--data-dir")
        let keys = try arguments.option("--keys-dir")
        if let data, let keys {
            // Both directories given: the configuration only lends its key rotation limits, if it loads.
            let loaded = try? CommandConfiguration.load(explicitFile: explicitFile)
            return StoreAccess(
                dataDirectory: data, keysDirectory: keys,
                keyRotation: loaded?.keys.rotationPolicy ?? KeyRotationPolicy(),
                configuration: loaded?.databaseURL == nil ? nil : loaded)
        }
        let configuration = try CommandConfiguration.load(explicitFile: explicitFile)
        return StoreAccess(
            dataDirectory: data ?? configuration.dataDirectory, keysDirectory: keys ?? configuration.keysDirectory,
            keyRotation: configuration.keys.rotationPolicy,
            configuration: configuration.databaseURL == nil ? nil : configuration)
    }

    /// The configuration `--config` names (default file, then the environment), ignoring the directory options.
    static func configuration(_ arguments: inout Arguments) throws -> CardVaultConfiguration {
        _ = try arguments.option("--data-dir")
        _ = try arguments.option("--keys-dir")
        return try CommandConfiguration.load(explicitFile: try arguments.option("--config"))
    }

    /// Runs an admin command through the daemon if it answers, else on the files under the lock.
    func call(
        _ command: String, arguments: [String: AdminValue] = [:], progress: (@Sendable (AdminValue) -> Void)? = nil
    )
        async throws -> AdminValue
    {
        let socket = StoreAdminCommands.socketPath(dataDirectory: dataDirectory)
        if try keysAreSealedAway() {
            return try await callDaemon(command, arguments: arguments, progress: progress)
        }
        if var configuration {
            configuration.keysDirectory = keysDirectory
            return try await callDatabase(
                command, configuration: configuration, arguments: arguments, progress: progress)
        }
        do {
            if AdminClient.isServing(path: socket) {
                return try AdminClient(path: socket).call(command, arguments: arguments, progress: progress)
            }
            var options = FileStoreOptions()
            options.keyRotation = keyRotation
            options.valueUpgrade = StoredRecordFormat.upgrade
            let store = try EncryptedFileStore.open(
                directory: dataDirectory, keysDirectory: keysDirectory, options: options)
            defer { store.close() }
            return try await Self.invoke(
                command, arguments: arguments, progress: progress, configuration: CardVaultConfiguration(),
                store: store, fingerprintKeys: store.fingerprintKeys
            ) { StoreAdminCommands.register(store, in: $0) }
        } catch let error as AdminError {
            throw CommandFailure(error.message)
        } catch let error as StoreError {
            throw CommandFailure(error.message)
        } catch let error as KeyRingError {
            throw CommandFailure(error.message)
        } catch let error as ConfigurationError {
            throw CommandFailure(error.message)
        }
    }
}

extension StoreAccess {
    /// Where this install's custody record lives.
    var custodyRecords: any CustodyRecords {
        StoreBackend.custodyRecords(configuration, keysDirectory: keysDirectory)
    }

    /// True when no key file opens the store (shares or HSM custody): only the unsealed daemon can run commands.
    func keysAreSealedAway() throws -> Bool {
        let recorded = try? custodyRecords.read()
        let provider = configuration?.kek.provider ?? recorded?.provider.rawValue ?? "file"
        return provider != KeyCustody.Provider.file.rawValue
    }

    /// Runs an admin command through the running daemon's admin socket; fails when no daemon serves.
    func callDaemon(
        _ command: String, arguments: [String: AdminValue] = [:], progress: (@Sendable (AdminValue) -> Void)? = nil
    ) async throws -> AdminValue {
        let socket = StoreAdminCommands.socketPath(dataDirectory: dataDirectory)
        guard AdminClient.isServing(path: socket) else {
            throw CommandFailure(
                "no daemon serves \(dataDirectory): the master key is not in a file; start the daemon, unseal it "
                    + "(`cardvault operator unseal`) and run this again")
        }
        do {
            return try AdminClient(path: socket).call(command, arguments: arguments, progress: progress)
        } catch let error as AdminError where error.code == AdminError.unknownCommand {
            throw CommandFailure("the daemon is sealed: unseal it first (`cardvault operator unseal`)")
        } catch let error as AdminError {
            throw CommandFailure(error.message)
        }
    }

    /// Runs an admin command on the PostgreSQL store (shared by the daemons; each sees a key change within a
    /// second).
    private func callDatabase(
        _ command: String, configuration: CardVaultConfiguration, arguments: [String: AdminValue],
        progress: (@Sendable (AdminValue) -> Void)?
    ) async throws -> AdminValue {
        let backend = try StoreBackend.database(configuration, logger: .disabled, leads: false)
        defer { backend.close() }
        do {
            return try await Self.invoke(
                command, arguments: arguments, progress: progress, configuration: configuration,
                store: backend.store, fingerprintKeys: backend.fingerprintKeys,
                registerStore: backend.registerAdminCommands)
        } catch let error as AdminError {
            throw CommandFailure(error.message)
        } catch let error as StoreError {
            throw CommandFailure(error.message)
        } catch let error as KeyRingError {
            throw CommandFailure(error.message)
        } catch let error as ConfigurationError {
            throw CommandFailure(error.message)
        }
    }

    /// Runs an admin command in this process: the store's commands (`registerStore`) and the merchant commands
    /// over `store`, as the daemon's admin socket would.
    private static func invoke(
        _ command: String, arguments: [String: AdminValue], progress: (@Sendable (AdminValue) -> Void)?,
        configuration: CardVaultConfiguration, store: any RecordStore, fingerprintKeys: any FingerprintKeySource,
        registerStore: (AdminHandlers) -> Void
    ) async throws -> AdminValue {
        let handlers = AdminHandlers()
        registerStore(handlers)
        MerchantAdminCommands.register(
            try MerchantAssembly.services(
                configuration: configuration, store: store, fingerprintKeys: fingerprintKeys, logger: .disabled),
            in: handlers)
        return try await handlers.invoke(command, arguments: arguments, progress: AdminProgress { progress?($0) })
    }
}
