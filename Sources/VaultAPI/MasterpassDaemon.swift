import Payments
import VaultCore
import VaultCrypto

/// Builds the Masterpass route group for the running daemon over the merchant API's services: the checkout
/// service shares their store, clock, random source and logger, vaults cards through their tokenization path and
/// checks bearer tokens with them.
public enum MasterpassDaemon {
    /// The route group for `serve`.
    /// - Parameters:
    ///   - authenticator: the 3-D Secure step (the pay-in service's card validation flow).
    ///   - cryptogramKey: the key sandbox cryptograms are computed under; a random one per process unless given.
    public static func routes(
        services: MerchantServices, configuration: CardVaultConfiguration, authenticator: any CheckoutAuthenticator,
        cryptogramKey: SymmetricKey = .random()
    ) -> MasterpassRoutes {
        let environment = services.environment
        let checkout = CheckoutService(
            store: environment.store, clock: environment.clock, random: environment.random,
            logger: environment.logger.with(["area": .string("checkout")]),
            configuration: CheckoutConfiguration(publicBaseURL: configuration.publicURL), cryptogramKey: cryptogramKey,
            vault: CheckoutMerchantVault(services: services), authenticator: authenticator)
        return MasterpassRoutes(checkout: checkout, services: services)
    }
}
