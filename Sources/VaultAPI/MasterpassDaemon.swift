import Payments
import VaultCore
import VaultCrypto

/// Builds the Masterpass route group for the running daemon over the merchant API's services: the checkout
/// service shares their store, clock, random source and logger, vaults cards through their tokenization path,
/// authenticates through the pay-in service's card validation (sandbox ACS page) and checks bearer tokens with
/// them.
public enum MasterpassDaemon {
    /// The key-source name sandbox cryptograms derive their key from; `~` keeps it apart from every ClientId.
    static let cryptogramKeyName = "~masterpass-cryptograms"

    /// The route group for `serve`.
    /// - Parameters:
    ///   - authenticator: the 3-D Secure step; by default the pay-in service's card validation flow.
    ///   - cryptogramKey: the key of sandbox cryptograms; by default derived from the fingerprint key source, so it
    ///     survives restarts.
    public static func routes(
        services: MerchantServices, configuration: CardVaultConfiguration,
        authenticator: (any CheckoutAuthenticator)? = nil, cryptogramKey: SymmetricKey? = nil
    ) throws -> MasterpassRoutes {
        let environment = services.environment
        let key = try cryptogramKey ?? environment.fingerprintKeys.fingerprintKey(forClient: cryptogramKeyName)
        let checkout = CheckoutService(
            store: environment.store, clock: environment.clock, random: environment.random,
            logger: environment.logger.with(["area": .string("checkout")]),
            configuration: CheckoutConfiguration(publicBaseURL: configuration.publicURL), cryptogramKey: key,
            vault: CheckoutMerchantVault(services: services),
            authenticator: authenticator ?? CheckoutPayInAuthenticator(payIns: services.payIns, cards: services.cards))
        return MasterpassRoutes(checkout: checkout, services: services)
    }
}
