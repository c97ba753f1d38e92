import AdminChannel
import CProcessControl
import CardVaultApp
import Configuration
import Foundation
import HTTPServer
import Payments
import VaultCore
import VaultCrypto
import VaultStore
import VaultStorePostgres

/// `cardvault serve`: runs the daemon until SIGTERM or SIGINT.
enum ServeCommand: Command {
    static let name = "serve"
    static let summary = "run the CardVault daemon (HTTP API) until SIGTERM or SIGINT"
    static let help = """
        usage: cardvault serve [--config FILE]

        Serves the CardVault HTTP API. Configuration is read from FILE (default:
        config/cardvault.json when it exists, else built-in defaults), then CARDVAULT_...
        environment variables override single fields (CARDVAULT_LISTEN=host:port,
        CARDVAULT_PUBLIC_URL, CARDVAULT_DATA_DIR, CARDVAULT_KEYS_DIR, ...; README.md lists them).
        An invalid configuration stops start-up with a message naming the field (exit 78).

        The master key's custody (docs/key-custody.md) is kek.provider, else what the custody
        record (<keys-dir>/custody.json, or the database's) says, else a development key file:
          file    opens the store with <keys-dir>/master.key (created with the store when neither
                  exists yet; development only, and said so at start-up)
          shares  starts sealed: /health answers 503 {"status":"sealed",...}, every API route 503,
                  until operators give the threshold of shares (`cardvault operator unseal`);
                  `cardvault operator seal` drops every key and seals it again
          pkcs11  opens the key inside the HSM token named by kek.* at start (a missing token or
                  key, or a wrong PIN, stops start-up with exit 78)
        It serves the admin socket that `cardvault keys`, `operator` and `clients` use, and creates
        a development client on the first start (or first unseal); its credentials are printed once.

        Before it reads a key it turns core dumps off (RLIMIT_CORE 0, not dumpable) and runs the
        Swift crash backtracer with frames only (SWIFT_BACKTRACE, set by re-executing itself;
        CARDVAULT_CRASH_BACKTRACE=off for no crash report). A data or keys directory that group or
        others can reach, or a key file they can read, stops start-up (exit 78).

        Prints "cardvault serving on URL" once listening; logs one JSON object per line on stderr.
        SIGTERM or SIGINT stops accepting connections, finishes in-flight requests, closes the
        store and exits 0.

        options:
          --config FILE   the JSON configuration file
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        let explicitFile = try arguments.option("--config")
        try arguments.finish()
        // Before anything else: the crash backtracer's settings (may re-execute this process), then
        // no core dumps. See ProcessHardening and docs/threat-model.md.
        let reexecProblem = ProcessHardening.reexecWithCrashBacktraceSettings()
        try ProcessHardening.disableCoreDumps()
        let configuration = try CommandConfiguration.load(explicitFile: explicitFile)
        // One line per request: written in batches (and at once for warnings), see the handler.
        let logHandler = BufferedJSONLineLogHandler()
        defer { logHandler.flush() }
        let logger = Logger(handler: logHandler, minimumLevel: configuration.logLevel)
        let announce: @Sendable (String) -> Void = { line in FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

        if let reexecProblem {
            logger.warning("crash backtracer settings not applied", ["reason": .string(reexecProblem)])
        }
        try ProcessHardening.enforcePrivateModes(
            dataDirectory: configuration.dataDirectory, keysDirectory: configuration.keysDirectory)
        let custody = try custodyOfKeys(configuration)
        logHardening(logger)
        signal(SIGPIPE, SIG_IGN)
        // Listen for the signals before the server announces its port, so none can slip in between.
        let signals = await TerminationSignals.catching([SIGTERM, SIGINT])
        defer { signals.cancel() }
        let phases = PhaseSwitch()
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                if let number = await signals.next() { phases.fire(.signal(number)) }
            }
            defer { group.cancelAll() }
            switch custody.provider {
            case .pkcs11:
                let key = try HSMCustody.open(configuration)
                logger.notice("the master key is inside the HSM token", ["keyCustody": "pkcs11"])
                let store = try openStore(configuration, masterKey: key, logger: logger, announce: announce)
                try await serve(configuration, store: store, custody: custody, phases: phases, logger, announce)
            case .file:
                logger.warning(
                    "key custody is a plain key file: for development only (PCI DSS 3.6.1.2 does not allow it in "
                        + "production); seal this install with `cardvault keys seal --shares N --threshold K`",
                    ["keyCustody": "file"])
                let store = try openStore(configuration, masterKey: nil, logger: logger, announce: announce)
                try await serve(configuration, store: store, custody: custody, phases: phases, logger, announce)
            case .shares:
                try await serveSealed(configuration, custody: custody, phases: phases, logger, announce)
            }
            return 0
        }
    }

    /// The master key's custody: `kek.provider` when set, checked against the keys directory's `custody.json`,
    /// else what that file records, else a development key file.
    static func custodyOfKeys(_ configuration: CardVaultConfiguration) throws -> KeyCustody {
        let recorded: KeyCustody?
        do {
            recorded = try StoreBackend.custodyRecords(configuration).read()
        } catch let error as KeyRingError {
            throw CommandFailure("cannot read the key custody: \(error.message)", status: 78)
        } catch let error as PostgresError {
            throw CommandFailure(
                "cannot read the key custody: \(error.message)", status: error.code == .schema ? 78 : 1)
        }
        guard let name = configuration.kek.provider else { return recorded ?? KeyCustody(provider: .file) }
        guard let provider = KeyCustody.Provider(rawValue: name) else {
            throw CommandFailure("invalid configuration: kek.provider must be file, shares or pkcs11", status: 78)
        }
        if let recorded, recorded.provider != provider {
            throw CommandFailure(
                "kek.provider is \(provider.rawValue) but the custody record says \(recorded.provider.rawValue); change "
                    + "one of them (docs/key-custody.md)", status: 78)
        }
        return recorded ?? KeyCustody(provider: provider)
    }

    private static func logHardening(_ logger: Logger) {
        let secureMemory = SecureMemory.shared.statistics
        let openSSL = SecureMemory.openSSLHeap
        logger.info(
            "process hardened",
            [
                "coreLimit": .int(0), "dumpable": .int(Int(cv_is_dumpable())),
                "swiftBacktrace": .string(ProcessInfo.processInfo.environment["SWIFT_BACKTRACE"] ?? ""),
                "secureMemoryBytes": .int(secureMemory.mappedBytes), "lockedBytes": .int(secureMemory.lockedBytes),
                "openSSLHeapBytes": .int(openSSL.mappedBytes),
            ])
        if secureMemory.unlockedMappings > 0 || openSSL.unlockedBytes > 0 {
            logger.notice(
                "secret buffers not locked in memory (RLIMIT_MEMLOCK); they stay excluded from dumps",
                [
                    "unlockedMappings": .int(secureMemory.unlockedMappings),
                    "openSSLUnlockedBytes": .int(openSSL.unlockedBytes),
                ])
        }
    }

    /// Shares custody: sealed until operators give the threshold of shares, serving until sealed again or stopped.
    private static func serveSealed(
        _ configuration: CardVaultConfiguration, custody: KeyCustody, phases: PhaseSwitch, _ logger: Logger,
        _ announce: @escaping @Sendable (String) -> Void
    ) async throws {
        let audit = CustodyAuditLog(dataDirectory: configuration.dataDirectory)
        let leftover = KeyRing.masterKeyPath(configuration.keysDirectory)
        if FileManager.default.fileExists(atPath: leftover) {
            logger.warning(
                "a key file lies beside a vault kept in shares (a `keys seal` cut short?): it may open older backups; "
                    + "destroy it once the vault unseals", ["path": .string(leftover)])
        }
        while phases.signal == nil {
            let unsealer = try Unsealer<DaemonStore>(
                records: StoreBackend.custodyRecords(configuration), audit: audit, logger: logger
            ) { masterKey in
                try openStore(configuration, masterKey: masterKey, logger: logger, announce: { _ in })
            }
            let sealed: SealedDaemon<DaemonStore>
            do {
                sealed = try SealedDaemon(
                    configuration: configuration, keyCustody: "shares", unsealer: unsealer, logger: logger,
                    announce: announce)
            } catch let error as AdminError {
                throw CommandFailure("cannot open the admin socket: \(error.message)")
            }
            logger.notice(
                "sealed: no key is in memory; operators unseal with `cardvault operator unseal`",
                ["threshold": .int(custody.threshold ?? 0)])
            guard let store = try await sealed.run(phases: phases) else { return }
            try await serve(configuration, store: store, custody: custody, phases: phases, logger, announce)
            if phases.signal == nil { logger.notice("sealed by an operator: every key was dropped from memory") }
        }
    }

    /// Serves the API over an opened store until a signal, or an operator's seal (shares custody).
    private static func serve(
        _ configuration: CardVaultConfiguration, store: DaemonStore, custody: KeyCustody, phases: PhaseSwitch,
        _ logger: Logger, _ announce: @escaping @Sendable (String) -> Void
    ) async throws {
        let daemon: CardVaultDaemon
        do {
            let commands = CustodyAdminCommands(
                records: StoreBackend.custodyRecords(configuration),
                audit: CustodyAuditLog(dataDirectory: configuration.dataDirectory),
                rewrap: { masterKey in try await store.rotateMaster(masterKey) },
                seal: { phases.fire(.sealRequested) })
            daemon = try await CardVaultDaemon(
                configuration: configuration, backend: store, keyCustody: custody.provider.rawValue, logger: logger,
                announce: announce,
                adminCommands: { handlers in
                    switch custody.provider {
                    case .shares: commands.register(in: handlers)
                    case .pkcs11:
                        handlers.register("keys.rotate-master") { _, _ in
                            throw AdminError(
                                "hsmCustody",
                                "the master key never leaves the HSM: make a new key in the token under a new "
                                    + "kek.keyLabel and move to it (docs/key-custody.md)")
                        }
                    case .file: break
                    }
                })
        } catch let error as ConfigurationError {
            store.close()
            throw CommandFailure("invalid configuration: \(error.message)", status: 78)
        } catch {
            store.close()
            throw error
        }
        do {
            try await daemon.run(until: { await phases.nextStop() })
        } catch let error as AdminError {
            throw CommandFailure("cannot open the admin socket: \(error.message)")
        } catch {
            throw CommandFailure(String(describing: error))
        }
    }

    /// Opens the record store. A brand-new deployment (no master key and no keyring yet) gets a
    /// development master key first; a missing key next to existing data is an error, never replaced.
    /// - Parameter masterKey: the master key rebuilt from shares; nil for the development key file.
    private static func openStore(
        _ configuration: CardVaultConfiguration, masterKey: (any KeyEncryptionKey)?, logger: Logger,
        announce: (String) -> Void
    ) throws -> DaemonStore {
        if configuration.databaseURL != nil {
            // Records and data keys live in PostgreSQL; the master key comes from shares, or a file on this host.
            let keyPath = KeyRing.masterKeyPath(configuration.keysDirectory)
            if let masterKey {
                return try StoreBackend.database(configuration, masterKey: masterKey, logger: logger, leads: true)
            }
            guard FileManager.default.fileExists(atPath: keyPath) else {
                throw CommandFailure(
                    "cannot open the keys: master key \(keyPath) does not exist; create it with `cardvault keys init` "
                        + "(development), or keep the master key in shares or an HSM (docs/key-custody.md)")
            }
            return try StoreBackend.database(configuration, logger: logger, leads: true)
        }
        let keyPath = KeyRing.masterKeyPath(configuration.keysDirectory)
        let ringPath = (configuration.dataDirectory as NSString).appendingPathComponent(KeyRing.keyRingFileName)
        do {
            if masterKey == nil, !FileManager.default.fileExists(atPath: keyPath),
                !FileManager.default.fileExists(atPath: ringPath)
            {
                if try KeyRing.createMasterKey(keysDirectory: configuration.keysDirectory) {
                    announce("created development master key \(keyPath)")
                }
            }
            var options = FileStoreOptions()
            options.logger = logger
            options.keyRotation = configuration.keys.rotationPolicy
            options.valueUpgrade = StoredRecordFormat.upgrade
            options.masterKey = masterKey
            let store = try EncryptedFileStore.open(
                directory: configuration.dataDirectory, keysDirectory: configuration.keysDirectory, options: options)
            let damaged = store.recovery.corruptedRecords + store.recovery.damage.count
            if damaged > 0 {
                logger.warning(
                    "damaged records in the store: reading them fails; run `cardvault verify` to name them",
                    [
                        "damagedRecords": .int(store.recovery.corruptedRecords),
                        "damagedRegions": .int(store.recovery.damage.count),
                    ])
            }
            return .file(store)
        } catch let error as StoreError {
            throw CommandFailure("cannot open the record store: \(error.message)")
        } catch let error as KeyRingError where masterKey != nil && error.code == .wrongMasterKey {
            throw error  // the unsealer tries the next candidate key
        } catch let error as KeyRingError {
            throw CommandFailure("cannot open the keys: \(error.message)")
        }
    }
}

extension CardVaultConfiguration.Keys {
    /// The keyring's rotation limits from `keys.rotateAfterSeals` and `keys.rotateAfterDays`.
    var rotationPolicy: KeyRotationPolicy {
        let seals = UInt64(max(rotateAfterSeals, 1))
        return KeyRotationPolicy(
            maximumSeals: seals, maximumAge: rotateAfterDays > 0 ? TimeInterval(rotateAfterDays) * 86_400 : nil,
            reservationBlock: min(KeyRotationPolicy.defaultReservationBlock, seals))
    }
}
