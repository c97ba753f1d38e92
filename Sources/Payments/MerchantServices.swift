public import Risk
import VaultCore
public import VaultCrypto

/// Every service of the merchant API, built once from one environment and shared by the routes.
public struct MerchantServices: Sendable {
    public let environment: PaymentsEnvironment
    public let clients: ClientRegistry
    public let bearerTokens: BearerTokens
    public let users: UserService
    public let wallets: WalletService
    public let cardRegistrations: CardRegistrationService
    public let cards: CardService
    public let idempotency: IdempotencyLedger
    /// Security codes held in memory after tokenization.
    public let securityCodes: SecurityCodeHold
    /// Direct card pay-ins, card validations and refunds, with 3-D Secure and risk scoring.
    public let payIns: PayInService
    /// Preauthorizations and deposit preauthorizations, and their captures.
    public let preauthorizations: PreauthorizationService
    /// Rate limits of the routes that answer without a login.
    public let abuseLimits: AbuseLimits

    public init(
        environment: PaymentsEnvironment, sandbox: SandboxBehaviour = SandboxBehaviour(),
        riskPolicy: RiskPolicy = RiskPolicy()
    ) {
        self.environment = environment
        clients = ClientRegistry(environment: environment)
        bearerTokens = BearerTokens(environment: environment)
        users = UserService(environment: environment)
        wallets = WalletService(environment: environment)
        securityCodes = SecurityCodeHold(clock: environment.clock)
        abuseLimits = AbuseLimits(configuration: environment.configuration, clock: environment.clock)
        cardRegistrations = CardRegistrationService(
            environment: environment, securityCodes: securityCodes, rateLimiter: abuseLimits.tokenization)
        cards = CardService(environment: environment, securityCodes: securityCodes)
        idempotency = IdempotencyLedger(environment: environment)
        payIns = PayInService(
            environment: environment, securityCodes: securityCodes, sandbox: sandbox,
            riskEngine: RiskEngine(policy: riskPolicy))
        preauthorizations = PreauthorizationService(payIns: payIns)
    }
}
