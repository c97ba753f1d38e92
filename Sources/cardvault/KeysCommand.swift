import AdminChannel
import Configuration
import Foundation
import VaultCore
import VaultCrypto
import VaultStore

#if canImport(Glibc)
import Glibc
#endif

/// `cardvault keys`: create the master key, list, rotate, re-wrap and retire data keys.
enum KeysCommand: Command {
    static let name = "keys"
    static let summary =
        "manage encryption keys: init, seal, rekey, list, status, rotate, rotate-master, rewrap, retire"
    static let help = """
        usage: cardvault keys <action> [--json] [--data-dir DIR] [--keys-dir DIR] [--config FILE]

        actions (docs/key-custody.md):
          init --shares N --threshold K [--json]
                             make a new vault's master key and print it once as N shares, any K of
                             which unseal the daemon (2 <= K <= N <= 16). The shares rebuild an unseal
                             key that is stored nowhere; the custody record (<keys-dir>/custody.json,
                             or the database's) keeps (K, N), the master key's check value and the
                             master key wrapped under the unseal key. The daemon then starts sealed
                             until operators give K shares (`cardvault operator unseal`)
          init --pkcs11      make the master key inside the configured PKCS#11 token (kek.module,
                             kek.tokenLabel, kek.keyLabel, the PIN from kek.pinFile or the environment)
                             as a non-extractable AES-256 key; the daemon opens it at start
          init               development only: a plain key file <keys-dir>/master.key (32 random
                             bytes, mode 0600) unless it exists (PCI DSS 3.6.1.2 forbids it in production)
          seal --shares N --threshold K [--json]  |  seal --pkcs11
                             turn a key-file install into a sealed one (daemon stopped): a new master
                             key, every data key rewrapped under it, printed as shares; the old key
                             file is overwritten, unlinked and synced away
          rekey --shares N --threshold K [--json]
                             a new unseal key and share set for the same master key (daemon running
                             and unsealed); reads the threshold of current shares from standard
                             input, one a line (not echoed on a terminal); once the new shares are
                             printed the change is committed and the old shares open nothing
          list [--json]      data key versions: creation time, records sealed under each, state
          status [--json]    data key versions with state, records, AES-GCM seals made under each
                             (an upper bound) and age, and the automatic rotation limits
                             (keys.rotateAfterSeals, keys.rotateAfterDays)
          rotate             add a data key version; new writes use it at once, old ones still decrypt
          rotate-master [--shares N --threshold K] [--json]
                             re-wrap every data key under a new master key; with shares custody it
                             reads the threshold of current shares from standard input and prints a
                             new share set (the current N and K unless given), committed once
                             printed; no old key material stays on disk (data backups taken before
                             open only with the old shares)
          rewrap             move every record to the newest data key (resumable, idempotent)
          retire VERSION     drop a data key version; refused for the current version (rotate first)
                             and while any record uses it (rewrap first)

        Progress (rewrap) goes to standard error; results to standard output.

        While the daemon runs, these go through its admin socket (<data-dir>/admin.sock) and take
        effect without a restart; otherwise they work on the files directly, under the data
        directory's lock. Directories not given come from the configuration, as for `serve`:
        the file (--config, default config/cardvault.json if present), then CARDVAULT_DATA_DIR
        and CARDVAULT_KEYS_DIR; else ./data and ./keys.
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        guard let action = arguments.positional() else {
            throw UsageError("missing action (try `cardvault keys --help`)")
        }
        switch action {
        case "init":
            let (split, json, hsmConfiguration, access) = try ceremonyOptions(&arguments)
            if let hsmConfiguration {
                try KeyCeremony.initializeHSM(access, configuration: hsmConfiguration)
                print("created a master key inside the HSM token; the daemon opens it at start (kek.provider pkcs11)")
                return 0
            }
            if let split {
                let made = try KeyCeremony.initialize(access, threshold: split.threshold, count: split.count)
                printShares(made, json: json, heading: "created a sealed vault's master key")
                return 0
            }
            let path = KeyRing.masterKeyPath(access.keysDirectory)
            if try KeyRing.createMasterKey(keysDirectory: access.keysDirectory) {
                print("created master key \(path)")
            } else {
                print("master key \(path) exists; left unchanged")
            }
            return 0
        case "list":
            let json = arguments.flag("--json")
            let access = try StoreAccess.parse(&arguments)
            try arguments.finish()
            let result = try await access.call("keys.list")
            print(json ? listJSON(result["keys"]?.arrayValue ?? []) : table(result["keys"]?.arrayValue ?? []))
            return 0
        case "status":
            let json = arguments.flag("--json")
            let access = try StoreAccess.parse(&arguments)
            try arguments.finish()
            let result = try await access.call("keys.status")
            print(json ? statusJSON(result) : statusText(result))
            return 0
        case "rotate":
            let access = try StoreAccess.parse(&arguments)
            try arguments.finish()
            let result = try await access.call("keys.rotate")
            print("rotated: new writes use data key version \(result["version"]?.intValue ?? 0)")
            return 0
        case "seal":
            let (split, json, hsmConfiguration, access) = try ceremonyOptions(&arguments)
            if let hsmConfiguration {
                try await KeyCeremony.sealHSM(access, configuration: hsmConfiguration)
                print("sealed: every data key is wrapped under a new key inside the HSM token; the key file is gone")
                return 0
            }
            guard let split else { throw UsageError("seal needs --shares N --threshold K, or --pkcs11") }
            try await KeyCeremony.seal(access, threshold: split.threshold, count: split.count) { made in
                printShares(made, json: json, heading: "seal: a new master key, as shares")
                fflush(nil)
            }
            if !json { print("sealed: every data key is wrapped under the new master key; the key file is gone") }
            return 0
        case "rekey":
            guard let split = try splitOptions(&arguments) else {
                throw UsageError("rekey needs --shares N --threshold K")
            }
            let json = arguments.flag("--json")
            let access = try StoreAccess.parse(&arguments)
            try arguments.finish()
            let current = ShareInput.lines(prompt: "current share")
            let result = try await access.callDaemon(
                "keys.rekey",
                arguments: [
                    "threshold": .int(split.threshold), "shares": .int(split.count),
                    "currentShares": .array(current.map { .string($0) }),
                ])
            try await showAndCommit(
                result, access: access, json: json, heading: "rekey: a new share set for the same master key")
            return 0
        case "rotate-master":
            let split = try splitOptions(&arguments)
            let json = arguments.flag("--json")
            let access = try StoreAccess.parse(&arguments)
            try arguments.finish()
            var given: [String: AdminValue] = [:]
            if let split {
                given = ["threshold": .int(split.threshold), "shares": .int(split.count)]
            }
            if try access.keysAreSealedAway() {
                given["currentShares"] = .array(ShareInput.lines(prompt: "current share").map { .string($0) })
            }
            let result = try await access.call("keys.rotate-master", arguments: given)
            if result["keyShares"] != nil {
                try await showAndCommit(
                    result, access: access, json: json, heading: "rotate-master: a new master key and share set")
                return 0
            }
            print(
                "rotated the master key: every data key is wrapped under the new \(KeyRing.masterKeyPath(access.keysDirectory))\n"
                    + "the old key file was overwritten and removed: data backups taken before open only with it")
            return 0
        case "rewrap":
            let access = try StoreAccess.parse(&arguments)
            try arguments.finish()
            let bar = ProgressDisplay(label: "rewrap")
            let result = try await access.call("keys.rewrap", progress: bar.update)
            bar.finish()
            for failure in result["failures"]?.arrayValue ?? [] {
                printError("cardvault keys: cannot rewrap \(failure.stringValue ?? "?")")
            }
            let remaining = result["remaining"]?.intValue ?? 0
            print("rewrap: moved \(result["moved"]?.intValue ?? 0) records; \(remaining) left on older data keys")
            return remaining == 0 ? 0 : 1
        case "retire":
            guard let text = arguments.positional() else { throw UsageError("retire needs a VERSION") }
            guard let version = Int(text), version > 0 else { throw UsageError("VERSION must be a positive integer") }
            let access = try StoreAccess.parse(&arguments)
            try arguments.finish()
            _ = try await access.call("keys.retire", arguments: ["version": .int(version)])
            print("retired data key version \(version)")
            return 0
        default:
            throw UsageError("unknown action '\(action)' (try `cardvault keys --help`)")
        }
    }

    /// What `init` and `seal` take: the share set, `--json`, `--pkcs11` (then the configuration that names the
    /// token) and where the keys live. Consumes every argument.
    private static func ceremonyOptions(
        _ arguments: inout Arguments
    ) throws -> (
        split: (threshold: Int, count: Int)?, json: Bool, hsm: CardVaultConfiguration?, access: StoreAccess
    ) {
        let split = try splitOptions(&arguments)
        let json = arguments.flag("--json")
        let hsm = arguments.flag("--pkcs11")
        var forConfiguration = arguments
        let access = try StoreAccess.parse(&arguments)
        try arguments.finish()
        return (split, json, hsm ? try StoreAccess.configuration(&forConfiguration) : nil, access)
    }

    /// `--shares N --threshold K`, both or neither.
    private static func splitOptions(_ arguments: inout Arguments) throws -> (threshold: Int, count: Int)? {
        let shares = try arguments.option("--shares")
        let threshold = try arguments.option("--threshold")
        guard shares != nil || threshold != nil else { return nil }
        guard let count = shares.flatMap({ Int($0) }), let threshold = threshold.flatMap({ Int($0) }),
            2 <= threshold, threshold <= count, count <= KeyShares.maximumShares
        else {
            throw UsageError(
                "--shares N --threshold K need whole numbers with 2 <= K <= N <= \(KeyShares.maximumShares)")
        }
        return (threshold, count)
    }

    /// Shows a prepared ceremony's shares, then commits it: nothing changes in the daemon until the shares are out.
    private static func showAndCommit(
        _ result: AdminValue, access: StoreAccess, json: Bool, heading: String
    ) async throws {
        guard let id = result["commit"]?.stringValue else { throw CommandFailure("the daemon prepared no ceremony") }
        guard case .object(var shown) = result else { return }
        shown["commit"] = nil
        printShares(.object(shown), json: json, heading: heading)
        fflush(nil)
        do {
            _ = try await access.callDaemon("keys.commit", arguments: ["commit": .string(id)])
        } catch {
            printError("cardvault keys: not committed; the shares above are void: \(error)")
            throw error
        }
        if !json { print("committed: the shares above replace the previous ones, which open nothing any more") }
    }

    /// Prints a new share set once: text (one share a line, with its index and check value) or JSON.
    private static func printShares(_ result: AdminValue, json: Bool, heading: String) {
        if json {
            print(jsonText(result))
            return
        }
        let threshold = result["threshold"]?.intValue ?? 0
        let shares = result["keyShares"]?.arrayValue ?? []
        print("\(heading); master key check value \(result["masterCheckValue"]?.stringValue ?? "?")")
        print(
            "\(shares.count) shares, any \(threshold) of which unseal the vault. They are shown this once and stored "
                + "nowhere: give each to one custodian (docs/key-custody.md).")
        for share in shares {
            print(
                "share \(share["index"]?.intValue ?? 0) (check value \(share["checkValue"]?.stringValue ?? "?")): "
                    + (share["share"]?.stringValue ?? ""))
        }
    }

    /// `keys list --json`: an array, oldest version first.
    private static func listJSON(_ keys: [AdminValue]) -> String {
        let items: [AdminValue] = keys.map { key in
            .object([
                "version": key["version"] ?? .null, "state": .string(state(key)),
                "created": .string(iso8601(key["created"]?.intValue ?? 0)), "records": key["records"] ?? .int(0),
            ])
        }
        return jsonText(.array(items))
    }

    static func jsonText(_ value: AdminValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        return (try? encoder.encode(value)).flatMap { String(data: $0, encoding: .utf8) } ?? "null"
    }

    private static func table(_ keys: [AdminValue]) -> String {
        let formatter = ISO8601DateFormatter()
        var lines = [pad("VERSION", 9) + pad("CREATED", 22) + pad("RECORDS", 10) + "STATE"]
        for key in keys {
            let created = Date(timeIntervalSince1970: TimeInterval(key["created"]?.intValue ?? 0))
            let state =
                key["retired"] == .bool(true) ? "retired" : key["current"] == .bool(true) ? "current" : "decrypt-only"
            lines.append(
                pad(String(key["version"]?.intValue ?? 0), 9) + pad(formatter.string(from: created), 22)
                    + pad(String(key["records"]?.intValue ?? 0), 10) + state)
        }
        return lines.joined(separator: "\n")
    }

    /// `keys status --json`: one object, `keys` oldest first.
    private static func statusJSON(_ result: AdminValue) -> String {
        let now = result["now"]?.intValue ?? 0
        let keys: [AdminValue] = (result["keys"]?.arrayValue ?? []).map { key in
            let created = key["created"]?.intValue ?? 0
            return .object([
                "version": key["version"] ?? .null,
                "state": .string(state(key)),
                "current": key["current"] ?? .bool(false),
                "retired": key["retired"] ?? .bool(false),
                "created": .string(iso8601(created)),
                "ageSeconds": .int(max(0, now - created)),
                "records": key["records"] ?? .int(0),
                "seals": key["seals"] ?? .int(0),
            ])
        }
        let object = AdminValue.object([
            "keys": .array(keys),
            "currentVersion": result["currentVersion"] ?? .null,
            "rotateAfterSeals": result["sealLimit"] ?? .null,
            "rotateAfterDays": result["maximumAgeSeconds"]?.intValue.map { .int($0 / 86_400) } ?? .null,
        ])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        return (try? encoder.encode(object)).flatMap { String(data: $0, encoding: .utf8) } ?? "{}"
    }

    /// `keys status`: a table, then the limits and how close the current version is to them.
    private static func statusText(_ result: AdminValue) -> String {
        let now = result["now"]?.intValue ?? 0
        let limit = result["sealLimit"]?.intValue ?? 0
        var lines = [
            pad("VERSION", 9) + pad("STATE", 14) + pad("CREATED", 22) + pad("AGE", 8) + pad("RECORDS", 10) + "SEALS"
        ]
        for key in result["keys"]?.arrayValue ?? [] {
            let created = key["created"]?.intValue ?? 0
            lines.append(
                pad(String(key["version"]?.intValue ?? 0), 9) + pad(state(key), 14) + pad(iso8601(created), 22)
                    + pad(String(max(0, now - created) / 86_400) + "d", 8)
                    + pad(String(key["records"]?.intValue ?? 0), 10)
                    + String(key["seals"]?.intValue ?? 0))
        }
        let days = result["maximumAgeSeconds"]?.intValue.map { "after \($0 / 86_400) days" } ?? "never by age"
        lines.append("")
        lines.append("automatic rotation: after \(limit) seals per data key, \(days)")
        if let current = (result["keys"]?.arrayValue ?? []).first(where: { $0["current"] == .bool(true) }) {
            let seals = current["seals"]?.intValue ?? 0
            let share = limit > 0 ? Double(seals) * 100 / Double(limit) : 0
            lines.append(
                "current version \(current["version"]?.intValue ?? 0): \(seals) of \(limit) seals used ("
                    + String(format: "%.2f", share) + "%)")
        }
        return lines.joined(separator: "\n")
    }

    private static func state(_ key: AdminValue) -> String {
        key["retired"] == .bool(true) ? "retired" : key["current"] == .bool(true) ? "current" : "decrypt-only"
    }

    private static func iso8601(_ seconds: Int) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }
}

/// Shows `{"done":N,"total":M}` progress on standard error (standard output holds only the result): a redrawn bar
/// on a terminal, plain lines otherwise.
final class ProgressDisplay: Sendable {
    private let label: String
    private let terminal = isatty(STDERR_FILENO) == 1
    private let drawn = Locked(false)

    init(label: String) { self.label = label }

    var update: @Sendable (AdminValue) -> Void {
        { [self] value in
            let done = value["done"]?.intValue ?? 0
            let total = max(value["total"]?.intValue ?? 0, 1)
            if terminal {
                let width = 30
                let filled = min(width, done * width / total)
                let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
                let line = "\r\(label) [\(bar)] \(min(100, done * 100 / total))% \(done)/\(total)"
                FileHandle.standardError.write(Data(line.utf8))
                drawn.withLock { $0 = true }
            } else {
                FileHandle.standardError.write(Data("\(label): \(done)/\(total) records\n".utf8))
            }
        }
    }

    func finish() {
        if drawn.withLock({ $0 }) { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
