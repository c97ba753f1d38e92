import AdminChannel
import Foundation
import VaultStore

/// `cardvault clients`: add and list merchant clients (through the running daemon, or on the files).
enum ClientsCommand: Command {
    static let name = "clients"
    static let summary = "manage merchant clients: add, list, rotate-key, remove, forward ID --on|--off"
    static let help = """
        usage: cardvault clients add NAME [--json] [--config FILE] [--data-dir DIR] [--keys-dir DIR]
               cardvault clients list [--json] [--config FILE] [--data-dir DIR] [--keys-dir DIR]
               cardvault clients rotate-key CLIENT_ID [--json] [--config FILE] [--data-dir DIR] [--keys-dir DIR]
               cardvault clients remove CLIENT_ID [--json] [--config FILE] [--data-dir DIR] [--keys-dir DIR]
               cardvault clients forward CLIENT_ID [--on | --off] [--config FILE] [--data-dir DIR] [--keys-dir DIR]

        add    creates a client and prints its ClientId and ApiKey. The API key is shown this once
               and stored only as a salted hash. With --json: {"ClientId": "...", "ApiKey": "..."}.
        list   lists the clients (never their keys): a CLIENT_ID, NAME, CREATED table, or with --json
               [{"ClientId": "...", "Name": "...", "CreationDate": "<ISO 8601>"}].
        rotate-key  gives the client a new API key, printed this once like add's; the old key and every
               bearer token issued with it stop working at once.
        remove ends the client: its API key and bearer tokens stop working at once. Its records stay,
               and its ClientId is never given to another client. With --json:
               {"ClientId": "...", "Removed": true, "TokensRevoked": N}.
        forward  allows (--on) or forbids (--off) the client to forward card data to the allowed
               destinations (POST /v2.01/{ClientId}/forward, docs/forward.md); off by default.
               Without a flag it prints the current setting: {"ClientId": "...", "Forward": true|false}.

        While the daemon runs these go through its admin socket; otherwise they open the data
        directory directly (under its lock).
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        guard let action = arguments.positional() else {
            throw UsageError("missing action: add, list, rotate-key, remove or forward")
        }
        let json = arguments.flag("--json")
        let access = try StoreAccess.parse(&arguments)
        switch action {
        case "add":
            guard let name = arguments.positional() else { throw UsageError("clients add needs a NAME") }
            try arguments.finish()
            let result = try await access.call("clients.add", arguments: ["name": .string(name)])
            guard let clientId = result["ClientId"]?.stringValue, let apiKey = result["ApiKey"]?.stringValue else {
                throw CommandFailure("the daemon gave no credentials")
            }
            if json {
                print(#"{"ClientId": "\#(clientId)", "ApiKey": "\#(apiKey)"}"#)
            } else {
                print("ClientId: \(clientId)\nApiKey:   \(apiKey)\n(the API key is shown this once; keep it safe)")
            }
        case "list":
            try arguments.finish()
            let clients = try await access.call("clients.list").arrayValue ?? []
            let formatter = ISO8601DateFormatter()
            func created(_ client: AdminValue) -> String {
                formatter.string(from: Date(timeIntervalSince1970: TimeInterval(client["CreationDate"]?.intValue ?? 0)))
            }
            if json {
                let items: [AdminValue] = clients.map { client in
                    .object([
                        "ClientId": client["ClientId"] ?? .string(""), "Name": client["Name"] ?? .string(""),
                        "CreationDate": .string(created(client)),
                    ])
                }
                print(KeysCommand.jsonText(.array(items)))
            } else {
                print("CLIENT_ID\tNAME\tCREATED")
                for client in clients {
                    print(
                        (client["ClientId"]?.stringValue ?? "") + "\t" + (client["Name"]?.stringValue ?? "") + "\t"
                            + created(client))
                }
            }
        case "rotate-key":
            guard let clientId = arguments.positional() else {
                throw UsageError("clients rotate-key needs a CLIENT_ID")
            }
            try arguments.finish()
            let result = try await access.call("clients.rotate-key", arguments: ["clientId": .string(clientId)])
            guard let apiKey = result["ApiKey"]?.stringValue else { throw CommandFailure("the daemon gave no key") }
            if json {
                print(#"{"ClientId": "\#(clientId)", "ApiKey": "\#(apiKey)"}"#)
            } else {
                print(
                    "ClientId: \(clientId)\nApiKey:   \(apiKey)\n(the new API key is shown this once; the old key and "
                        + "its bearer tokens no longer work)")
            }
        case "remove":
            guard let clientId = arguments.positional() else { throw UsageError("clients remove needs a CLIENT_ID") }
            try arguments.finish()
            let result = try await access.call("clients.remove", arguments: ["clientId": .string(clientId)])
            let revoked = result["TokensRevoked"]?.intValue ?? 0
            if json {
                print(#"{"ClientId": "\#(clientId)", "Removed": true, "TokensRevoked": \#(revoked)}"#)
            } else {
                print("removed client \(clientId): its API key and \(revoked) bearer tokens no longer work")
            }
        case "forward":
            guard let clientId = arguments.positional() else { throw UsageError("clients forward needs a CLIENT_ID") }
            let on = arguments.flag("--on")
            let off = arguments.flag("--off")
            guard !(on && off) else { throw UsageError("clients forward takes --on or --off, not both") }
            try arguments.finish()
            var request: [String: AdminValue] = ["clientId": .string(clientId)]
            if on || off { request["enabled"] = .bool(on) }
            let result = try await access.call("clients.forward", arguments: request)
            print(#"{"ClientId": "\#(clientId)", "Forward": \#(result["Forward"] == .bool(true))}"#)
        default:
            throw UsageError("unknown action '\(action)': use add, list, rotate-key, remove or forward")
        }
        return 0
    }
}
