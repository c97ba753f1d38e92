public import Configuration
public import HTTPServer
import MangopayAPI
public import VaultCore

/// Assembles the daemon's HTTP side: the configuration, the route groups and the server.
///
/// Areas of the API add themselves as ``RouteGroup`` values:
/// `CardVaultApplication(configuration: c, logger: l, routeGroups: [MangopayRoutes(...)])`.
public struct CardVaultApplication: Sendable {
    public let configuration: CardVaultConfiguration
    public let logger: Logger
    public let metrics: HTTPMetrics
    public let routeGroups: [any RouteGroup]
    /// How the master key is kept (file, shares, pkcs11), shown by `/health`.
    public let keyCustody: String?

    public init(
        configuration: CardVaultConfiguration,
        logger: Logger,
        metrics: HTTPMetrics = HTTPMetrics(),
        routeGroups: [any RouteGroup] = [],
        keyCustody: String? = nil
    ) {
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
        self.routeGroups = routeGroups
        self.keyCustody = keyCustody
    }

    /// Every route: health and metrics, then each group in order.
    public func makeRouter() -> Router {
        // The HTTP layer's own errors are worded in the Mangopay dialect on every path (as the API always has).
        var router = Router(errorDialect: .mangopay)
        let groups: [any RouteGroup] =
            [HealthRoutes(keyCustody: keyCustody), MetricsRoutes(metrics: metrics, token: configuration.metricsToken)]
            + routeGroups
        for group in groups {
            group.register(on: &router)
        }
        return router
    }

    /// The server, configured and routed, not yet started.
    ///
    /// - Throws: ``ConfigurationError`` when TLS files cannot be read.
    public func makeServer() throws(ConfigurationError) -> HTTPServer {
        HTTPServer(
            configuration: try configuration.serverConfiguration(),
            router: makeRouter(),
            logger: logger,
            metrics: metrics
        )
    }
}
