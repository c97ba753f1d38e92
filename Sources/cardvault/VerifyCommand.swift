import AdminChannel
import VaultStore

/// `cardvault verify`: read and authenticate every stored record.
enum VerifyCommand: Command {
    static let name = "verify"
    static let summary = "read every stored record and report any that fails authentication"
    static let help = """
        usage: cardvault verify [--data-dir DIR] [--keys-dir DIR] [--config FILE]

        Reads every record of the encrypted store and checks it against its key and place
        (collection, id, key version). Prints one line per record that fails, naming it (never
        its content), and any damaged region of the log. Exit status 0 when everything is
        authentic, 1 otherwise. Goes through the daemon's admin socket while it runs.

        Progress goes to standard error, the findings to standard output. A record found damaged stays
        flagged in the store's index: reading it fails at once (the API answers a JSON error with its Id),
        the next start-up counts it in its "damaged" figure, and /metrics shows it
        (cardvault_store_damaged_records) until the record is written again or restored from a backup.
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        let access = try StoreAccess.parse(&arguments)
        try arguments.finish()
        let bar = ProgressDisplay(label: "verify")
        let result = try await access.call("store.verify", progress: bar.update)
        bar.finish()
        let failures = result["failures"]?.arrayValue ?? []
        let damage = result["damage"]?.arrayValue ?? []
        for failure in failures { print("FAILED \(failure.stringValue ?? "?")") }
        for place in damage { print("DAMAGED \(place.stringValue ?? "?")") }
        let checked = result["checked"]?.intValue ?? 0
        if failures.isEmpty && damage.isEmpty {
            print("verified \(checked) records: all authentic")
            return 0
        }
        print("verified \(checked) records: \(failures.count) failed, \(damage.count) damaged regions")
        return 1
    }
}
