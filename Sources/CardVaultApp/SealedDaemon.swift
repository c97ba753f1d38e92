public import AdminChannel
public import Configuration
public import HTTPServer
import MangopayAPI
public import VaultCore

/// The daemon while its master key is not in memory: `GET /health` answers 503 `{"status":"sealed",…}` with the
/// unseal progress, `/metrics` works, every other route answers 503, and the admin socket takes operator shares
/// (``Unsealer``). It runs until the shares open the keyring or the process is told to stop.
public struct SealedDaemon<Opened: Sendable>: Sendable {
    public let unsealer: Unsealer<Opened>
    public let server: HTTPServer
    public let admin: AdminSocketServer
    private let logger: Logger
    private let announce: @Sendable (String) -> Void
    private let listenURL: @Sendable (Int) -> String

    /// Builds the sealed server and binds the admin socket.
    public init(
        configuration: CardVaultConfiguration, keyCustody: String, unsealer: Unsealer<Opened>, logger: Logger,
        announce: @escaping @Sendable (String) -> Void
    ) throws {
        self.unsealer = unsealer
        self.logger = logger
        self.announce = announce
        let metrics = HTTPMetrics()
        metrics.addCollector {
            "# HELP cardvault_sealed 1 while the daemon's keys are not in memory.\n# TYPE cardvault_sealed gauge\n"
                + "cardvault_sealed 1\n"
        }
        var router = Router(errorDialect: .mangopay)
        router.unmatched = HTTPError(
            .unavailable, status: .serviceUnavailable,
            message: "CardVault is sealed: its keys are not in memory until operators unseal it "
                + "(cardvault operator unseal)")
        router.addImmediate(.get, "/health") { _ in
            let status = unsealer.status
            var body = #"{"status":"sealed","keyCustody":""# + keyCustody + #"","unseal":{"progress":"#
            body += String(status.progress) + #","threshold":"# + (status.threshold.map(String.init) ?? "null") + "}}"
            return Response(
                status: .serviceUnavailable,
                headers: ["Content-Type": "application/json", "Cache-Control": "no-store", "Retry-After": "5"],
                body: Array(body.utf8))
        }
        MetricsRoutes(metrics: metrics, token: configuration.metricsToken).register(on: &router)
        server = HTTPServer(
            configuration: try configuration.serverConfiguration(), router: router, logger: logger, metrics: metrics)
        let handlers = AdminHandlers()
        unsealer.register(in: handlers)
        admin = AdminSocketServer(
            path: StoreAdminCommands.socketPath(dataDirectory: configuration.dataDirectory), handlers: handlers,
            logger: logger)
        try admin.start()
        let scheme = configuration.tls.isEnabled ? "https" : "http"
        let host = configuration.listenHost.contains(":") ? "[\(configuration.listenHost)]" : configuration.listenHost
        listenURL = { port in "\(scheme)://\(host):\(port)" }
    }

    /// Serves sealed until the shares open the keyring (its result) or `phases` ends the phase with a signal (nil).
    public func run(phases: PhaseSwitch) async throws -> Opened? {
        let logger = logger
        let announce = announce
        let listenURL = listenURL
        let unsealer = unsealer
        let http = HTTPService(server: server) { port in
            logger.notice("listening sealed", ["url": .string(listenURL(port))])
            announce("cardvault sealed, serving on \(listenURL(port)); unseal it with `cardvault operator unseal`")
        }
        let watcher = UnsealWatcher(unsealer: unsealer, phases: phases)
        try await DaemonLifecycle.run(
            services: [admin, watcher, http], logger: logger, until: { await phases.nextStop() }, close: {})
        guard phases.signal == nil else { return nil }
        return await unsealer.opened()
    }
}

/// Ends the sealed phase once the unsealer has opened the keyring.
private struct UnsealWatcher<Opened: Sendable>: Service {
    let unsealer: Unsealer<Opened>
    let phases: PhaseSwitch
    var name: String { "unseal" }

    func run() async throws {
        await withTaskCancellationHandler {
            if await unsealer.opened() != nil { phases.fire(.unsealed) }
        } onCancel: {
            unsealer.cancel()
        }
        await untilCancelled()
    }
}
