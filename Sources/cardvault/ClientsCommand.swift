import AdminChannel
import Foundation
import VaultStore

/// `cardvault clients`: add and list merchant clients (through the running daemon, or on the files).
enum ClientsCommand: Command {
    static let name = "clients"
    static let summary = "manage merchant clients: add NAME (prints its credentials once), list"
    static let help = """
        usage: cardvault clients add NAME [--json] [--config FILE] [--data-dir DIR] [--keys-dir DIR]
               cardvault clients list [--json] [--config FILE] [--data-dir DIR] [--keys-dir DIR]

        add    creates a client and prints its ClientId and ApiKey. The API key is shown this once
               and stored only as a salted hash. With --json: {"ClientId": "...", "ApiKey": "..."}.
        list   lists the clients (never their keys).

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
        default:
            throw UsageError("unknown action '\(action)': use add or list")
        }
        return 0
    }
}
