import AdminChannel
import Foundation
import VaultStore

/// `cardvault clients`: add and list merchant clients (through the running daemon, or on the files).
enum ClientsCommand: Command {
    static let name = "clients"
    static let summary = "manage merchant clients: add NAME (prints its credentials once), list, forward ID --on|--off"
    static let help = """
        usage: cardvault clients add NAME [--json] [--config FILE] [--data-dir DIR] [--keys-dir DIR]
               cardvault clients list [--json] [--config FILE] [--data-dir DIR] [--keys-dir DIR]
               cardvault clients forward CLIENT_ID [--on | --off] [--config FILE] [--data-dir DIR] [--keys-dir DIR]

        add    creates a client and prints its ClientId and ApiKey. The API key is shown this once
               and stored only as a salted hash. With --json: {"ClientId": "...", "ApiKey": "..."}.
        list   lists the clients (never their keys).
        forward  allows (--on) or forbids (--off) the client to forward card data to the allowed
               destinations (POST /v2.01/{ClientId}/forward, docs/forward.md); off by default.
               Without a flag it prints the current setting: {"ClientId": "...", "Forward": true|false}.

        While the daemon runs these go through its admin socket; otherwise they open the data
        directory directly (under its lock).
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        guard let action = arguments.positional() else { throw UsageError("missing action: add or list") }
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
            if json {
                let items = clients.map { client in
                    #"{"ClientId": "\#(client["ClientId"]?.stringValue ?? "")", "Name": "\#(client["Name"]?.stringValue ?? "")"}"#
                }
                print("[" + items.joined(separator: ", ") + "]")
            } else {
                for client in clients {
                    print((client["ClientId"]?.stringValue ?? "") + "\t" + (client["Name"]?.stringValue ?? ""))
                }
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
            throw UsageError("unknown action '\(action)': use add, list or forward")
        }
        return 0
    }
}
