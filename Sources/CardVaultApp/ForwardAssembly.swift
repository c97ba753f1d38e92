public import AdminChannel
public import Configuration
public import Forward
import Foundation
import OutboundHTTP
public import Payments
import VaultCore

/// Builds the forward service for the running daemon from `forward.*`, and the operator's `clients.forward` admin
/// command.
public enum ForwardAssembly {
    /// The forward service's settings, with the CA file checked.
    /// - Throws: ``ConfigurationError`` naming `forward.caFile` when it cannot be read as PEM.
    public static func settings(
        _ forward: CardVaultConfiguration.Forward
    ) throws(ConfigurationError)
        -> ForwardConfiguration
    {
        if let caFile = forward.caFile {
            guard let data = FileManager.default.contents(atPath: caFile),
                String(decoding: data, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----")
            else {
                throw ConfigurationError(
                    .invalidValue, field: "forward.caFile",
                    message: "forward.caFile: cannot read a PEM certificate at \(caFile)")
            }
        }
        return ForwardConfiguration(
            destinations: forward.destinations.compactMap { try? DestinationPrefix(parsing: $0) },
            client: OutboundHTTPConfiguration(
                caFile: forward.caFile, connectTimeoutMilliseconds: forward.connectTimeoutSeconds * 1000,
                timeoutMilliseconds: forward.timeoutSeconds * 1000, maxResponseBytes: forward.maxResponseBodyBytes,
                maxConcurrentTransfers: forward.maxConcurrent,
                addressPolicy: AddressPolicy(
                    allowedSpecialNetworks: forward.privateNetworks.compactMap { IPNetwork($0) })
            ),
            maxRequestBodyBytes: forward.maxRequestBodyBytes)
    }

    /// The forward service and its HTTPS client (a `Service` the daemon runs).
    /// - Throws: ``ConfigurationError`` naming `forward.caFile` when it cannot be read.
    public static func service(
        configuration: CardVaultConfiguration, services: MerchantServices
    ) throws(ConfigurationError) -> ForwardService {
        let settings = try settings(configuration.forward)
        return ForwardService(
            configuration: settings, services: services, client: OutboundHTTPClient(configuration: settings.client))
    }

    /// `clients.forward {clientId, enabled?}`: sets (or, without `enabled`, reads) a client's permission to
    /// forward card data. An operator decision, so not part of the merchant API.
    public static func registerAdminCommands(_ services: MerchantServices, in handlers: AdminHandlers) {
        handlers.register("clients.forward") { arguments, _ in
            guard let clientId = arguments["clientId"]?.stringValue else {
                throw AdminError(AdminError.badMessage, "clients.forward needs a \"clientId\"")
            }
            guard try await services.clients.client(clientId) != nil else {
                throw AdminError("notFound", "no client \(clientId)")
            }
            let permissions = ForwardPermissions(store: services.environment.store)
            if case .bool(let enabled)? = arguments["enabled"] {
                let now = Int64(services.environment.clock.now.timeIntervalSince1970.rounded(.down))
                try await permissions.set(clientId: clientId, enabled: enabled, now: now)
                services.environment.logger.notice(
                    "forward permission changed", ["clientId": .string(clientId), "forward": .bool(enabled)])
            }
            return .object([
                "ClientId": .string(clientId), "Forward": .bool(try await permissions.isEnabled(clientId: clientId)),
            ])
        }
    }
}
