import Foundation
import HTTPServer
import VaultAPI
import VaultCore
import VaultCrypto
import VaultStore

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

        Prints "cardvault serving on URL" once listening; logs one JSON object per line on stderr.
        SIGTERM or SIGINT stops accepting connections, finishes in-flight requests and exits 0.

        options:
          --config FILE   the JSON configuration file
        """

    static let defaultConfigFile = "config/cardvault.json"

    static func run(_ arguments: inout Arguments) throws -> Int32 {
        let explicitFile = try arguments.option("--config")
        try arguments.finish()
        let file = explicitFile ?? (FileManager.default.fileExists(atPath: defaultConfigFile) ? defaultConfigFile : nil)

        let configuration: CardVaultConfiguration
        let server: HTTPServer
        let logger: Logger
        do {
            configuration = try CardVaultConfiguration.load(file: file)
        } catch {
            throw CommandFailure("invalid configuration: \(error.message)", status: 78)
        }
        logger = Logger(handler: JSONLineLogHandler(), minimumLevel: configuration.logLevel)
        let mangopay = try MangopayDaemon.routes(
            configuration: configuration, store: InMemoryRecordStore(),
            fingerprintKeys: DerivedFingerprintKeys(secret: .random()), logger: logger
        ) { line in FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
        do {
            server = try CardVaultApplication(configuration: configuration, logger: logger, routeGroups: [mangopay])
                .makeServer()
        } catch {
            throw CommandFailure("invalid configuration: \(error.message)", status: 78)
        }

        signal(SIGPIPE, SIG_IGN)
        let outcome = ServeOutcome()
        let finished = DispatchSemaphore(value: 0)
        let scheme = configuration.tls.isEnabled ? "https" : "http"
        Task {
            do {
                try await server.run { port in
                    let host = configuration.listenHost.contains(":") ? "[\(configuration.listenHost)]" : configuration.listenHost
                    let url = "\(scheme)://\(host):\(port)"
                    logger.notice("listening", ["url": .string(url), "publicURL": .string(configuration.publicURL)])
                    FileHandle.standardOutput.write(Data("cardvault serving on \(url)\n".utf8))
                }
            } catch {
                outcome.failure = String(describing: error)
            }
            finished.signal()
        }
        finished.wait()
        if let failure = outcome.failure {
            throw CommandFailure(failure)
        }
        return 0
    }
}

/// Carries the server task's failure back to the command.
private final class ServeOutcome: @unchecked Sendable {
    var failure: String?
}
