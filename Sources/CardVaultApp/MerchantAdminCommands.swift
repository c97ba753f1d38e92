public import AdminChannel
public import Payments

/// The merchant API's admin commands, for `cardvault clients`: `clients.add` (prints the new client's
/// credentials once) and `clients.list`. The daemon registers them on its admin socket; the CLI runs the
/// same handlers on the files when the daemon is stopped.
public enum MerchantAdminCommands {
    public static func register(_ services: MerchantServices, in handlers: AdminHandlers) {
        handlers.register("clients.add") { arguments, _ in
            guard let name = arguments["name"]?.stringValue else {
                throw AdminError(AdminError.badMessage, "clients.add needs a \"name\"")
            }
            do {
                let credentials = try await services.clients.create(name: name)
                return .object(["ClientId": .string(credentials.clientId), "ApiKey": .string(credentials.apiKey)])
            } catch let error as PaymentsError {
                throw AdminError(error.code.rawValue, error.fieldErrors.values.sorted().first ?? error.message)
            }
        }
        MasterpassAdminCommands.register(services, in: handlers)
        ForwardAssembly.registerAdminCommands(services, in: handlers)
        handlers.register("clients.rotate-key") { arguments, _ in
            guard let clientId = arguments["clientId"]?.stringValue else {
                throw AdminError(AdminError.badMessage, "clients.rotate-key needs a \"clientId\"")
            }
            do {
                let credentials = try await services.clients.rotateKey(
                    clientId: clientId, tokens: services.bearerTokens)
                return .object(["ClientId": .string(credentials.clientId), "ApiKey": .string(credentials.apiKey)])
            } catch let error as PaymentsError {
                throw AdminError(error.code.rawValue, error.message)
            }
        }
        handlers.register("clients.remove") { arguments, _ in
            guard let clientId = arguments["clientId"]?.stringValue else {
                throw AdminError(AdminError.badMessage, "clients.remove needs a \"clientId\"")
            }
            do {
                let revoked = try await services.clients.remove(clientId: clientId, tokens: services.bearerTokens)
                return .object(["ClientId": .string(clientId), "TokensRevoked": .int(revoked)])
            } catch let error as PaymentsError {
                throw AdminError(error.code.rawValue, error.message)
            }
        }
        HookAssembly.registerAdminCommands(services, in: handlers)
        handlers.register("clients.list") { _, _ in
            let clients = try await services.clients.active()
            return .array(
                clients.map { client in
                    .object([
                        "ClientId": .string(client.clientId), "Name": .string(client.name),
                        "CreationDate": .int(Int(client.creationDate)),
                    ])
                })
        }
    }
}
