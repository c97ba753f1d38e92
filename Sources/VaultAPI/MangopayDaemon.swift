import Dispatch
import Foundation
import HTTPServer
import Payments
import VaultCore
import VaultCrypto
import VaultStore

/// Builds the Mangopay route group for the running daemon from its configuration, and creates the development
/// client on first start.
public enum MangopayDaemon {
    /// Environment variable with the checkout origins allowed to post card data (comma-separated, `*` for any).
    public static let checkoutOriginsVariable = "CARDVAULT_CHECKOUT_ORIGINS"
    /// Name of the client created when the store has none.
    public static let developmentClientName = "dev"

    /// The services over `store`, with the settings taken from `configuration`.
    public static func services(
        configuration: CardVaultConfiguration, store: any RecordStore, fingerprintKeys: any FingerprintKeySource,
        logger: Logger, clock: any WallClock = SystemClock()
    ) -> MerchantServices {
        MerchantServices(
            environment: PaymentsEnvironment(
                store: store, clock: clock, fingerprintKeys: fingerprintKeys,
                configuration: PaymentsConfiguration(publicBaseURL: configuration.publicURL), logger: logger))
    }

    /// The route group for `serve`. When the store holds no client yet, creates the development client and hands
    /// its credentials (shown once, never stored in clear) to `announce`.
    public static func routes(
        configuration: CardVaultConfiguration, store: any RecordStore, fingerprintKeys: any FingerprintKeySource,
        logger: Logger, environment: [String: String] = ProcessInfo.processInfo.environment,
        announce: @escaping @Sendable (String) -> Void
    ) throws -> MangopayRoutes {
        let services = services(configuration: configuration, store: store, fingerprintKeys: fingerprintKeys, logger: logger)
        try blocking {
            guard try await services.clients.all().isEmpty else { return }
            let credentials = try await services.clients.create(name: developmentClientName)
            announce(
                "development client created (shown once): ClientId=\(credentials.clientId) ApiKey=\(credentials.apiKey)")
        }
        let origins = (environment[checkoutOriginsVariable] ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return MangopayRoutes(
            services: services, checkoutOrigins: origins, openAPIDocument: MangopayRoutes.loadOpenAPIDocument())
    }

    /// Runs `body` to completion from synchronous start-up code.
    static func blocking(_ body: @escaping @Sendable () async throws -> Void) throws {
        let outcome = BlockingOutcome()
        let done = DispatchSemaphore(value: 0)
        Task {
            do { try await body() } catch { outcome.set(error) }
            done.signal()
        }
        done.wait()
        if let error = outcome.error { throw error }
    }
}

/// Carries an error out of a task to the thread that waits for it.
private final class BlockingOutcome: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: (any Error)?
    var error: (any Error)? { lock.withLock { stored } }
    func set(_ error: any Error) { lock.withLock { stored = error } }
}
