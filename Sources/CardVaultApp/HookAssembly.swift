public import AdminChannel
public import Configuration
public import Hooks
public import OutboundHTTP
public import Payments
public import VaultCore

/// Builds hooks and their delivery engine for the running daemon from `hooks.*`, and the operator's `hooks.*` admin
/// commands (`cardvault hooks`).
public enum HookAssembly {
    /// The hook service (routes, admin commands) over the merchant API's environment.
    public static func service(configuration: CardVaultConfiguration, services: MerchantServices) -> HookService {
        HookService(
            environment: services.environment,
            policy: HookDestinationPolicy(allowPrivateAddresses: configuration.hooks.allowPrivateAddresses))
    }

    /// The delivery engine with its own outbound client (2 s for the whole exchange, as Mangopay counts a
    /// delivery; 64 KiB answer cap; the hooks' address policy).
    public static func engine(
        configuration: CardVaultConfiguration, hooks: HookService
    ) -> (
        HookDeliveryEngine, OutboundHTTPClient
    ) {
        let client = OutboundHTTPClient(
            configuration: OutboundHTTPConfiguration(
                connectTimeoutMilliseconds: 2_000, timeoutMilliseconds: 2_000, maxResponseBytes: 64 << 10,
                maxConcurrentTransfers: 256, addressPolicy: hooks.policy.addressPolicy, userAgent: "CardVault-Hooks/1"))
        let engine = HookDeliveryEngine(
            hooks: hooks, transport: OutboundHookTransport(client: client),
            schedule: HookSchedule(retryInterval: Int64(configuration.hooks.retryIntervalSeconds)),
            maxConcurrentPerDestination: configuration.hooks.maxConcurrentPerDestination)
        return (engine, client)
    }

    /// The daemon's services for hooks: the outbound client and the engine's rounds (led by one daemon).
    public static func services(
        configuration: CardVaultConfiguration, engine: HookDeliveryEngine, client: OutboundHTTPClient,
        leadership: (any Leadership)?, logger: Logger
    ) -> [any Service] {
        [
            client,
            engine.service(
                interval: .milliseconds(configuration.hooks.pollIntervalMilliseconds),
                leadership: leadership ?? SoleLeadership(), logger: logger.with(["service": .string("hook-delivery")])),
        ]
    }

    /// `hooks.list {clientId?}`, `hooks.retry {clientId?}`, `hooks.replay {clientId, from}`,
    /// `hooks.rotateSecret {clientId}`.
    public static func registerAdminCommands(_ services: MerchantServices, in handlers: AdminHandlers) {
        let hooks = HookService(environment: services.environment)
        handlers.register("hooks.list") { arguments, _ in
            let clientId = arguments["clientId"]?.stringValue
            let all: [Hook]
            if let clientId {
                all = try await hooks.all(clientId: clientId)
            } else {
                all = try await hooks.allClients()
            }
            let pending = try await hooks.pending(clientId: clientId)
            let failures = try await hooks.failures(clientId: clientId)
            return .object([
                "Hooks": .array(
                    all.map { hook in
                        .object([
                            "ClientId": .string(hook.clientId), "Id": .string(hook.id),
                            "EventType": .string(hook.eventType.rawValue), "Url": .string(hook.url),
                            "Status": .string(hook.status.rawValue), "Validity": .string(hook.validity.rawValue),
                        ])
                    }),
                "Pending": .array(pending.map(describe)),
                "Failed": .array(failures.map(describe)),
            ])
        }
        handlers.register("hooks.retry") { arguments, _ in
            let count = try await hooks.retryFailures(clientId: arguments["clientId"]?.stringValue)
            return .object(["Queued": .int(count)])
        }
        handlers.register("hooks.replay") { arguments, _ in
            guard let clientId = arguments["clientId"]?.stringValue, let from = arguments["from"]?.intValue else {
                throw AdminError(AdminError.badMessage, "hooks.replay needs a \"clientId\" and a \"from\" date")
            }
            let count = try await hooks.replay(clientId: clientId, fromDate: Int64(from))
            return .object(["Queued": .int(count)])
        }
        handlers.register("hooks.rotateSecret") { arguments, _ in
            guard let clientId = arguments["clientId"]?.stringValue else {
                throw AdminError(AdminError.badMessage, "hooks.rotateSecret needs a \"clientId\"")
            }
            guard try await services.clients.client(clientId) != nil else {
                throw AdminError("notFound", "no client \(clientId)")
            }
            let secret = try await hooks.rotateSecret(clientId: clientId)
            return .object(["ClientId": .string(clientId), "Secret": .string(secret.unsafeRevealed)])
        }
    }

    static func describe(_ state: HookDeliveryState) -> AdminValue {
        .object([
            "ClientId": .string(state.clientId), "EventId": .string(state.id),
            "EventType": .string(state.eventType.rawValue), "ResourceId": .string(state.resourceId),
            "Date": .int(Int(state.date)), "Failures": .int(state.failures ?? 0),
            "NextAttemptAt": state.nextAttemptAt.map { .int(Int($0)) } ?? .null,
            "LastFailure": state.lastFailure.map { .string($0) } ?? .null,
            "GivenUpAt": state.givenUpAt.map { .int(Int($0)) } ?? .null,
        ])
    }
}
