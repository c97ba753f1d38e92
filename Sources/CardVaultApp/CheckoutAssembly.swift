public import AdminChannel
public import Checkout
public import Configuration
public import MasterpassAPI
public import Payments
import VaultCore
public import VaultCrypto
import VaultStore

/// Builds the Masterpass route group for the running daemon over the merchant API's services: the checkout
/// service shares their store, clock, random source and logger, vaults cards through their tokenization path,
/// authenticates through the pay-in service's card validation (sandbox ACS page) and checks bearer tokens with
/// them.
public enum CheckoutAssembly {
    /// The key-source name sandbox cryptograms derive their key from; `~` keeps it apart from every ClientId.
    static let cryptogramKeyName = "~masterpass-cryptograms"

    /// The checkout service over the merchant API's services.
    /// - Parameters:
    ///   - authenticator: the 3-D Secure step; by default the pay-in service's card validation flow.
    ///   - cryptogramKey: the key of sandbox cryptograms; by default derived from the fingerprint key source, so it
    ///     survives restarts.
    public static func checkoutService(
        services: MerchantServices, configuration: CardVaultConfiguration,
        authenticator: (any CheckoutAuthenticator)? = nil, cryptogramKey: SymmetricKey? = nil
    ) throws -> CheckoutService {
        let environment = services.environment
        let key = try cryptogramKey ?? environment.fingerprintKeys.fingerprintKey(forClient: cryptogramKeyName)
        return CheckoutService(
            store: environment.store, clock: environment.clock, random: environment.random,
            logger: environment.logger.with(["area": .string("checkout")]),
            configuration: CheckoutConfiguration(
                publicBaseURL: configuration.publicURL,
                sessionLifetimeSeconds: configuration.lifetimes.checkoutSessionSeconds),
            cryptogramKey: key, recordIds: try environment.recordIds,
            vault: CheckoutMerchantVault(services: services),
            authenticator: authenticator ?? CheckoutPayInAuthenticator(payIns: services.payIns, cards: services.cards))
    }

    /// The route group for `serve`; parameters as
    /// ``checkoutService(services:configuration:authenticator:cryptogramKey:)``.
    public static func routes(
        services: MerchantServices, configuration: CardVaultConfiguration,
        authenticator: (any CheckoutAuthenticator)? = nil, cryptogramKey: SymmetricKey? = nil
    ) throws -> MasterpassRoutes {
        MasterpassRoutes(
            checkout: try checkoutService(
                services: services, configuration: configuration, authenticator: authenticator,
                cryptogramKey: cryptogramKey),
            services: services)
    }
}

extension MasterpassRoutes {
    /// Routes over the merchant API's bearer tokens and its hosted-page rate limit.
    public init(checkout: CheckoutService, services: MerchantServices) {
        self.init(checkout: checkout, pageLimit: services.abuseLimits.hostedPages) { token in
            do {
                return try await services.bearerTokens.clientId(forToken: token)
            } catch let error as PaymentsError where error.code == .invalidToken {
                return nil
            }
        }
    }
}

/// The operator's checkout commands on the admin channel, for `cardvault checkout pci`: `checkout.pci` sets or
/// clears a client's PCI-compliant flag (such a client receives card numbers in payment data). An operator
/// decision, so it is not part of the merchant API.
public enum MasterpassAdminCommands {
    public static func register(_ services: MerchantServices, in handlers: AdminHandlers) {
        handlers.register("checkout.pci") { arguments, _ in
            guard let clientId = arguments["clientId"]?.stringValue, case .bool(let compliant)? = arguments["compliant"]
            else { throw AdminError(AdminError.badMessage, "checkout.pci needs \"clientId\" and \"compliant\"") }
            guard try await services.clients.client(clientId) != nil else {
                throw AdminError("notFound", "no client \(clientId)")
            }
            let checkout = try CheckoutAssembly.checkoutService(
                services: services, configuration: CardVaultConfiguration())
            try await checkout.setPCICompliant(clientId: clientId, compliant)
            return .object(["clientId": .string(clientId), "pciCompliant": .bool(compliant)])
        }
    }
}
