import Checkout
public import Configuration
public import HTTPServer
import Hooks
import OwnerAccounts
public import Payments
import Payouts
public import VaultCore
import VaultStore

/// The daemon's background services besides the HTTP server and the admin socket.
public enum BackgroundServices {
    /// The record sweeper over every kind of record the merchant API and the hosted checkout write, with its
    /// counts added to `metrics` (`cardvault_records{kind}`, `cardvault_records_expired_total{kind}`). Run the
    /// services in the daemon's ``ServiceGroup``; close the store only after it returned.
    public static func make(
        configuration: CardVaultConfiguration, services: MerchantServices, metrics: HTTPMetrics, logger: Logger,
        leadership: (any Leadership)? = nil
    ) throws -> [any Service] {
        let checkout = try CheckoutAssembly.checkoutService(services: services, configuration: configuration)
        let sweeper = RecordSweeper(
            store: services.environment.store, clock: services.environment.clock,
            lifetimes: recordLifetimes(services: services, checkout: checkout),
            rounds: ledRounds(services.sweepRounds, leadership: leadership),
            logger: logger.with(["service": .string("record-sweeper")]))
        metrics.addCollector { sweeper.metricsText() }
        return sweeper.services(
            interval: .seconds(configuration.lifetimes.sweepIntervalSeconds),
            leadership: leadership ?? SoleLeadership(), logger: logger)
    }

    /// The rounds with the first (the challenge deadlines, shared by every daemon on one database) run only on
    /// the daemon that leads "challenge-sweeper"; the in-memory expiries run on each.
    static func ledRounds(
        _ rounds: [@Sendable () async throws -> Void], leadership: (any Leadership)?
    ) -> [@Sendable () async throws -> Void] {
        guard let leadership, let challenges = rounds.first else { return rounds }
        let led: @Sendable () async throws -> Void = {
            _ = try await leadership.runIfLeader("challenge-sweeper", challenges)
        }
        return [led] + rounds.dropFirst()
    }

    /// Every collection the daemon writes, with its lifetime: the merchant API's, the hosted checkout's, and the
    /// checkout shoppers that join them.
    static func recordLifetimes(services: MerchantServices, checkout: CheckoutService) -> [RecordLifetime] {
        let recordIds = try? services.environment.recordIds
        return services.recordLifetimes + checkout.recordLifetimes + HookService.recordLifetimes
            + ScaService.recordLifetimes + KycDocumentService.recordLifetimes + PayOutService.recordLifetimes + [
                RecordLifetime(kept: CheckoutMerchantVault.shoppers, "with the user it points at").movingClearIds {
                    recordIds?.rekeyedScopedId($0)
                },
                RecordSweeper.stateLifetime,
            ]
    }
}
