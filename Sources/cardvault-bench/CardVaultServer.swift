import AdminChannel
import Foundation
import VaultCrypto
import VaultStore

/// A live `cardvault serve` on a free loopback port with fresh data and keys directories, as the
/// HTTP suite's subject. Absent (nil) while the built binary has no `serve` command.
///
/// Benchmark settings, all through documented configuration fields (README.md, "Configuration"):
/// log level `warn` (nginx runs without an access log); `tokenizationsPerMinutePerAddress` raised
/// from 60 to 100,000,000 and `http.maxConnectionsPerAddress` from 64 to 512, because every
/// benchmark connection comes from 127.0.0.1; and a
/// `riskFile` that raises the velocity limits, because the pay-in workload repeats pay-ins on the
/// same cards, user and address far beyond what the default rules let through frictionless.
final class CardVaultServer {
    /// The development client's credentials, printed once by the first start.
    struct Credentials {
        var clientId: String
        var apiKey: String
    }

    private(set) var port: Int
    private var child: ChildProcess
    let home: String
    let dataDirectory: String
    let keysDirectory: String
    private let context: SuiteContext
    private let extraEnvironment: [String: String]
    /// With shares custody: the share lines the bench unseals every start with (held in this process only).
    private let shares: [String]
    /// The development client, read from the first start's output.
    let credentials: Credentials

    /// The risk thresholds the bench runs with (fields of `RiskPolicy`; the rest keep their defaults).
    static let riskOverrides = """
        {"maxPerCard": 1000000000, "maxPerUser": 1000000000, "maxPerIP": 1000000000, "maxPerDevice": 1000000000,
         "cardsPerDeviceChallenge": 1000000000, "cardsPerDeviceBlock": 1000000000}
        """

    /// The release binary the Makefile builds, or CARDVAULT_BENCH_BIN (to measure another build, e.g. an older
    /// commit's, side by side with the same bench).
    static func binary(in context: SuiteContext) -> String {
        ProcessInfo.processInfo.environment["CARDVAULT_BENCH_BIN"] ?? context.root + "/.build/release/cardvault"
    }

    /// True when the built `cardvault` lists a `serve` command.
    static func canServe(in context: SuiteContext) -> Bool {
        let binary = binary(in: context)
        guard FileManager.default.isExecutableFile(atPath: binary),
            let help = try? ChildProcess.run(binary, ["--help"], timeout: 10)
        else { return false }
        return help.stdout.split(separator: "\n").contains {
            $0.trimmingCharacters(in: .whitespaces).hasPrefix("serve")
        }
    }

    /// Starts the daemon on fresh directories (it creates a development master key and client) and
    /// waits until it accepts.
    /// - Parameter extraEnvironment: further `CARDVAULT_…` settings (the forward suite's destinations).
    /// - Parameter sharing: the development client of another daemon on the same database (this one prints none).
    /// - Parameter sealed: shares custody (2 of 2, made in this process); every start is sealed and unsealed here.
    init(
        context: SuiteContext, extraEnvironment: [String: String] = [:], sharing: Credentials? = nil,
        sealed: Bool = false
    ) throws {
        self.context = context
        home = try context.temporaryDirectory("cardvault")
        keysDirectory = home + "/keys"
        dataDirectory = home + "/data"
        _ = FileManager.default.createFile(
            atPath: home + "/risk.json", contents: Data(Self.riskOverrides.utf8), attributes: [.posixPermissions: 0o600]
        )
        var environment = extraEnvironment
        shares = sealed ? try Self.initializeShares(home: home) : []
        if sealed { environment["CARDVAULT_KEK_PROVIDER"] = "shares" }
        self.extraEnvironment = environment
        let started = try Self.start(context: context, home: home, extraEnvironment: environment)
        (port, child) = started
        try Self.unseal(started.1, shares: shares, dataDirectory: dataDirectory)
        if let sharing {
            credentials = sharing
            return
        }
        // The line comes once the port is bound and the client is written: on PostgreSQL under load, a moment
        // after the port accepts.
        var output = child.output()
        let deadline = Date().addingTimeInterval(15)
        while !output.contains("ClientId="), Date() < deadline, child.isRunning {
            Thread.sleep(forTimeInterval: 0.05)
            output = child.output()
        }
        guard let line = output.split(separator: "\n").first(where: { $0.contains("ClientId=") }),
            let idRange = line.range(of: "ClientId="), let keyRange = line.range(of: " ApiKey=")
        else {
            child.stop()
            throw BenchFailure("cardvault serve printed no development client")
        }
        credentials = Credentials(
            clientId: String(line[idRange.upperBound..<keyRange.lowerBound]),
            apiKey: String(line[keyRange.upperBound...]).trimmingCharacters(in: .whitespaces))
    }

    private static func start(
        context: SuiteContext, home: String, extraEnvironment: [String: String] = [:]
    ) throws -> (Int, ChildProcess) {
        let port = try LoopbackPort.free()
        var environment = [
            "CARDVAULT_LISTEN": "127.0.0.1:\(port)",
            "CARDVAULT_PUBLIC_URL": "http://127.0.0.1:\(port)",
            "CARDVAULT_DATA_DIR": home + "/data",
            "CARDVAULT_KEYS_DIR": home + "/keys",
            "CARDVAULT_LOG_LEVEL": "warn",
            "CARDVAULT_TOKENIZATIONS_PER_MINUTE_PER_ADDRESS": "100000000",
            "CARDVAULT_HTTP_MAX_CONNECTIONS_PER_ADDRESS": "512",
            "CARDVAULT_RISK_FILE": home + "/risk.json",
        ]
        environment.merge(extraEnvironment) { _, extra in extra }
        environment.merge(try PostgresBackendOption.environment(home: home, binary: binary(in: context))) { $1 }
        let child = try ChildProcess.start(
            binary(in: context), ["serve", "--config", context.root + "/config/cardvault.json"],
            environment: environment)
        do {
            try LoopbackPort.waitUntilAccepting(port, timeout: 30, what: "cardvault serve") { child.isRunning }
        } catch {
            let tail = child.errors().split(separator: "\n").suffix(2).joined(separator: " / ")
            child.stop()
            throw BenchFailure("\(error) \(tail)")
        }
        return (port, child)
    }

    /// A shares custody for a new file store in `home` (what `cardvault keys init --shares 2 --threshold 2` does,
    /// with the shares kept in this process).
    private static func initializeShares(home: String) throws -> [String] {
        let split = try MasterKeySplit.fresh(threshold: 2, count: 2)
        try KeyRing.createKeysDirectory(home + "/keys")
        var options = FileStoreOptions()
        options.masterKey = split.masterKey
        try EncryptedFileStore.open(directory: home + "/data", keysDirectory: home + "/keys", options: options).close()
        try CustodyFile(keysDirectory: home + "/keys").write(split.custody)
        return split.shareLines.map(\.line)
    }

    /// Gives a sealed daemon its shares through the admin socket, then waits until it serves again.
    private static func unseal(_ child: ChildProcess, shares: [String], dataDirectory: String) throws {
        guard !shares.isEmpty else { return }
        let socket = StoreAdminCommands.socketPath(dataDirectory: dataDirectory)
        for share in shares {
            _ = try AdminClient(path: socket).call("operator.unseal", arguments: ["share": .string(share)])
        }
        let deadline = Date().addingTimeInterval(30)
        while child.isRunning, Date() < deadline {
            if child.output().split(separator: "\n").contains(where: { $0.hasPrefix("cardvault serving on") }) {
                return
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw BenchFailure("cardvault serve did not serve after its shares were given")
    }

    /// The base URL.
    var url: String { "http://127.0.0.1:\(port)" }

    /// Kills the daemon with SIGKILL (no shutdown, no final flush), as a crash would.
    func crash() { child.kill() }

    /// The daemon's process id.
    var processID: pid_t { child.pid }

    /// The daemon's user + system CPU seconds so far (/proc), to charge a run's CPU to its requests.
    var cpuSeconds: Double? { ProcessCPU.seconds(of: child.pid) }

    /// The same by thread name (``ProcessCPU/secondsByThread(of:)``).
    var cpuSecondsByThread: [String: Double] { ProcessCPU.secondsByThread(of: child.pid) }

    /// Starts the daemon again on the same directories (after ``crash()`` or ``stop()``).
    func restart() throws {
        child.stop()
        (port, child) = try Self.start(context: context, home: home, extraEnvironment: extraEnvironment)
        try Self.unseal(child, shares: shares, dataDirectory: dataDirectory)
    }

    /// Stops the daemon gracefully (SIGTERM).
    func stop() { child.stop(grace: 10) }

    deinit { child.stop() }
}
