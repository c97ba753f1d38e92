public import Configuration
public import Forward
import Foundation
public import HTTPServer
public import Hooks
import MangopayAPI
import MasterpassAPI
public import Payments
import Risk
public import VaultCore
public import VaultCrypto
public import VaultStore

/// Builds the Mangopay route group for the running daemon from its configuration, and creates the development
/// client on first start.
public enum MerchantAssembly {
    /// Name of the client created when the store has none.
    public static let developmentClientName = "dev"

    /// The services over `store`, with the settings taken from `configuration` (the sandbox table and risk
    /// thresholds are read from their files when configured).
    /// - Throws: ``ConfigurationError`` naming `sandboxFile` or `riskFile` when one cannot be read or parsed.
    public static func services(
        configuration: CardVaultConfiguration, store: any RecordStore, fingerprintKeys: any FingerprintKeySource,
        logger: Logger, clock: any WallClock = SystemClock()
    ) throws(ConfigurationError) -> MerchantServices {
        let sandbox =
            try configuration.sandboxFile.map { (file) throws(ConfigurationError) in
                try JSONOverDefaults.load(file, over: SandboxBehaviour(), field: "sandboxFile")
            } ?? SandboxBehaviour()
        let risk =
            try configuration.riskFile.map { (file) throws(ConfigurationError) in
                try JSONOverDefaults.load(file, over: RiskPolicy(), field: "riskFile")
            } ?? RiskPolicy()
        var payments = PaymentsConfiguration(
            publicBaseURL: configuration.publicURL,
            accessKeyLifetime: TimeInterval(configuration.lifetimes.accessKeySeconds),
            tokenizationsPerMinutePerAddress: configuration.tokenizationsPerMinutePerAddress,
            pageViewsPerMinutePerAddress: configuration.pageViewsPerMinutePerAddress,
            acsRequestsPerMinutePerAddress: configuration.acsRequestsPerMinutePerAddress,
            tokenFailuresPerMinutePerAddress: configuration.tokenFailuresPerMinutePerAddress,
            rateLimitTrackedAddresses: configuration.rateLimitTrackedAddresses)
        // Daemons sharing a database each see only their own commits: their risk counters read the history again
        // after a second.
        payments.riskCountersRefreshSeconds = configuration.databaseURL == nil ? nil : 1
        return MerchantServices(
            environment: PaymentsEnvironment(
                store: store, clock: clock, random: RandomPool.shared, fingerprintKeys: fingerprintKeys,
                configuration: payments, logger: logger),
            sandbox: sandbox, riskPolicy: risk)
    }

    /// When the store holds no client yet, creates the development client and hands its credentials (shown once,
    /// never stored in clear) to `announce`. `serve` calls it once the HTTP port is bound, so credentials are
    /// never printed by a daemon that then fails to start.
    public static func createDevelopmentClientIfNone(
        services: MerchantServices, announce: @Sendable (String) -> Void
    ) async throws {
        guard try await services.clients.all().isEmpty else { return }
        let credentials = try await services.clients.create(name: developmentClientName)
        announce(
            "development client created (shown once): ClientId=\(credentials.clientId) ApiKey=\(credentials.apiKey)")
    }

    /// The route groups for `serve`: the Mangopay dialect and the pay-ins with their sandbox ACS.
    public static func routes(
        configuration: CardVaultConfiguration, services: MerchantServices, forward: ForwardService? = nil,
        hooks: HookService? = nil, announce: @escaping @Sendable (String) -> Void
    ) async throws -> [any RouteGroup] {
        return [
            MangopayRoutes(
                services: services, checkoutOrigins: configuration.checkoutOrigins,
                openAPIDocument: MangopayRoutes.loadOpenAPIDocument()),
            PayInRoutes(services: services),
            LifecycleRoutes(services: services),
            PayPalRoutes(services: services),
            PreauthorizationRoutes(services: services),
            WebPayInRoutes(services: services),
            WebPayInPageRoutes(services: services),
            try CheckoutAssembly.routes(services: services, configuration: configuration),
        ] + (forward.map { [ForwardRoutes(forward: $0, services: services)] } ?? [])
            + [
                HookRoutes(
                    hooks: hooks ?? HookAssembly.service(configuration: configuration, services: services),
                    services: services)
            ]
    }
}
