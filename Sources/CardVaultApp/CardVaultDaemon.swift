public import AdminChannel
import BusinessMetrics
public import Configuration
public import Forward
public import HTTPServer
public import Hooks
public import Payments
public import VaultCore
public import VaultStore

/// The daemon `cardvault serve` runs: the merchant API and hosted checkout over one opened store, as one
/// ``ServiceGroup`` of the HTTP server, the admin socket and the record sweeper (``BackgroundServices``: every
/// kind's lifetime, pending 3-D Secure challenges, held security codes). ``run(until:)`` stops them all on the
/// first termination signal, waits for each, and closes the store after the last.
public struct CardVaultDaemon: Sendable {
    public let services: MerchantServices
    /// The record sweeper's services.
    public let background: [any Service]
    /// Detokenize-and-forward (`POST /v2.01/{ClientId}/forward`); its HTTPS client is one of the services.
    public let forward: ForwardService
    /// Hooks and events; the delivery engine and its outbound client are among the services.
    public let hooks: HookService
    public let hookEngine: HookDeliveryEngine
    private let hookServices: [any Service]
    public let server: HTTPServer
    public let admin: AdminSocketServer
    public let store: DaemonStore
    public let logger: Logger
    private let announce: @Sendable (String) -> Void
    private let listenURL: @Sendable (Int) -> String

    /// Builds every part over `store` (which it closes when ``run(until:)`` ends) and binds the admin socket; the
    /// HTTP server starts with ``run(until:)``. Creates the development client when the store has none.
    ///
    /// - Parameter announce: prints a line for the operator (development credentials, "cardvault serving on").
    /// - Throws: ``ConfigurationError`` for unreadable settings files or TLS material, ``AdminError`` when the
    ///   admin socket cannot be bound, store errors.
    public init(
        configuration: CardVaultConfiguration, store: EncryptedFileStore, logger: Logger,
        announce: @escaping @Sendable (String) -> Void
    ) async throws {
        try await self.init(configuration: configuration, backend: .file(store), logger: logger, announce: announce)
    }

    /// Builds every part over `backend` (the file store, or PostgreSQL shared with other daemons).
    /// - Parameters:
    ///   - keyCustody: how the master key is kept, for `/health` (file, shares, pkcs11).
    ///   - adminCommands: registers further admin commands (the custody's: seal, rekey, rotate-master).
    public init(
        configuration: CardVaultConfiguration, backend store: DaemonStore, keyCustody: String? = nil,
        logger: Logger, announce: @escaping @Sendable (String) -> Void,
        adminCommands: @Sendable (AdminHandlers) -> Void = { _ in }
    ) async throws {
        self.store = store
        self.logger = logger
        self.announce = announce
        services = try MerchantAssembly.services(
            configuration: configuration, store: store.store, fingerprintKeys: store.fingerprintKeys, logger: logger)
        let forward = try ForwardAssembly.service(configuration: configuration, services: services)
        self.forward = forward
        let hooks = HookAssembly.service(configuration: configuration, services: services)
        self.hooks = hooks
        let (hookEngine, hookClient) = HookAssembly.engine(configuration: configuration, hooks: hooks)
        self.hookEngine = hookEngine
        hookServices = HookAssembly.services(
            configuration: configuration, engine: hookEngine, client: hookClient, leadership: store.leadership,
            logger: logger)
        let groups = try await MerchantAssembly.routes(
            configuration: configuration, services: services, forward: forward, hooks: hooks, announce: announce)
        let metrics = HTTPMetrics()
        metrics.addCollector { [store] in store.keyMetricsText() }
        background = try BackgroundServices.make(
            configuration: configuration, services: services, metrics: metrics, logger: logger,
            leadership: store.leadership)
        metrics.addCollector { forward.metrics.prometheusText() }
        let businessMetrics = services.environment.metrics
        metrics.addCollector { businessMetrics.prometheusText() }
        let storeBackend = configuration.databaseURL == nil ? "file" : "postgresql"
        metrics.addCollector { BuildInfo.prometheusText(storeBackend: storeBackend) }
        metrics.addCollector { hookEngine.metrics.prometheusText() }
        server = try CardVaultApplication(
            configuration: configuration, logger: logger, metrics: metrics, routeGroups: groups, keyCustody: keyCustody
        ).makeServer()

        let handlers = AdminHandlers()
        store.registerAdminCommands(handlers)
        MerchantAdminCommands.register(services, in: handlers)
        adminCommands(handlers)
        admin = AdminSocketServer(
            path: StoreAdminCommands.socketPath(dataDirectory: configuration.dataDirectory), handlers: handlers,
            logger: logger)
        try admin.start()

        StartupChecks.warnAboutBrowserOrigins(configuration, logger: logger)

        let scheme = configuration.tls.isEnabled ? "https" : "http"
        let host = configuration.listenHost.contains(":") ? "[\(configuration.listenHost)]" : configuration.listenHost
        listenURL = { port in "\(scheme)://\(host):\(port)" }
        publicURL = configuration.publicURL
    }

    private let publicURL: String

    /// The daemon's services, in the order they start: the admin socket, the sweeper, the hooks' outbound client
    /// and delivery engine, the forward route's HTTPS client, the HTTP server.
    public var serviceList: [any Service] {
        let logger = logger
        let announce = announce
        let listenURL = listenURL
        let publicURL = publicURL
        return [admin as any Service] + background + hookServices + [
            forward.client,
            HTTPService(server: server) { [services] port in
                let url = listenURL(port)
                logger.notice("listening", ["url": .string(url), "publicURL": .string(publicURL)])
                // Only now that the port is bound: a daemon that cannot start never shows credentials.
                do {
                    try await MerchantAssembly.createDevelopmentClientIfNone(services: services, announce: announce)
                } catch {
                    logger.error(
                        "development client not created", ["errorType": .string(String(describing: type(of: error)))])
                }
                announce("cardvault serving on \(url)")
            },
        ]
    }

    /// Runs every service until `stop` returns a signal (``TerminationSignals/next()``), then waits for all of
    /// them and closes the store.
    public func run(until stop: @escaping @Sendable () async -> Int32?) async throws {
        let store = store
        try await DaemonLifecycle.run(services: serviceList, logger: logger, until: stop) { store.close() }
    }
}
