import AdminChannel
import Foundation

/// `cardvault hooks`: the operator's view of hook deliveries (through the running daemon, or on the files).
enum HooksCommand: Command {
    static let name = "hooks"
    static let summary =
        "hook deliveries: list [CLIENT_ID], retry [CLIENT_ID], replay CLIENT_ID --from UNIX, rotate-secret"
    static let help = """
        usage: cardvault hooks list [CLIENT_ID] [--json] [--config FILE] [--data-dir DIR] [--keys-dir DIR]
               cardvault hooks retry [CLIENT_ID] [--config FILE] [--data-dir DIR] [--keys-dir DIR]
               cardvault hooks replay CLIENT_ID --from UNIX_SECONDS [--config FILE] [--data-dir DIR] [--keys-dir DIR]
               cardvault hooks rotate-secret CLIENT_ID [--config FILE] [--data-dir DIR] [--keys-dir DIR]

        list     the hooks (Status, Validity), the events waiting for delivery and those given up
                 (after 3 days of failures, or for an INVALID hook), of one client or all.
        retry    queues every given-up event again from the start of the retry schedule and makes
                 the client's INVALID hooks VALID again.
        replay   queues again every event of the client dated at or after --from (Unix seconds),
                 for the hooks that exist now (receivers see them at least twice).
        rotate-secret  replaces the client's signing secret (CardVault-Signature) and prints the new
                 one, once; deliveries from now on are signed with it.

        While the daemon runs these go through its admin socket; otherwise they open the data
        directory directly (under its lock).
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        guard let action = arguments.positional() else {
            throw UsageError("missing action: list, retry, replay or rotate-secret")
        }
        let json = arguments.flag("--json")
        let from = try arguments.option("--from")
        let access = try StoreAccess.parse(&arguments)
        let clientId = arguments.positional()
        try arguments.finish()
        var request: [String: AdminValue] = [:]
        if let clientId { request["clientId"] = .string(clientId) }
        switch action {
        case "list":
            let result = try await access.call("hooks.list", arguments: request)
            if json {
                print(String(decoding: try JSONEncoder().encode(result), as: UTF8.self))
            } else {
                for hook in result["Hooks"]?.arrayValue ?? [] {
                    print(
                        ["ClientId", "Id", "EventType", "Status", "Validity", "Url"].map {
                            hook[$0]?.stringValue ?? ""
                        }.joined(separator: "\t"))
                }
                for (title, key) in [("pending", "Pending"), ("given up", "Failed")] {
                    let items = result[key]?.arrayValue ?? []
                    print("\(items.count) \(title)")
                    for item in items {
                        let fields = ["ClientId", "EventType", "ResourceId"].map { item[$0]?.stringValue ?? "" }
                        let failures = item["Failures"]?.intValue ?? 0
                        let reason = item["LastFailure"]?.stringValue ?? ""
                        print("  " + fields.joined(separator: "\t") + "\tfailures=\(failures)\t\(reason)")
                    }
                }
            }
        case "retry":
            let result = try await access.call("hooks.retry", arguments: request)
            print(#"{"Queued": \#(result["Queued"]?.intValue ?? 0)}"#)
        case "replay":
            guard clientId != nil else { throw UsageError("hooks replay needs a CLIENT_ID") }
            guard let from, let seconds = Int(from), seconds >= 0 else {
                throw UsageError("hooks replay needs --from UNIX_SECONDS")
            }
            request["from"] = .int(seconds)
            let result = try await access.call("hooks.replay", arguments: request)
            print(#"{"Queued": \#(result["Queued"]?.intValue ?? 0)}"#)
        case "rotate-secret":
            guard clientId != nil else { throw UsageError("hooks rotate-secret needs a CLIENT_ID") }
            let result = try await access.call("hooks.rotateSecret", arguments: request)
            guard let secret = result["Secret"]?.stringValue else { throw CommandFailure("the daemon gave no secret") }
            print("Secret: \(secret)\n(shown this once; deliveries are signed with it from now on)")
        default:
            throw UsageError("unknown action '\(action)': use list, retry, replay or rotate-secret")
        }
        return 0
    }
}
