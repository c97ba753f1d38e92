import AdminChannel
import Foundation
import VaultCore

#if canImport(Glibc)
import Glibc
#endif

/// `cardvault operator`: unseal, seal and the unseal status of a daemon whose master key is kept as shares.
enum OperatorCommand: Command {
    static let name = "operator"
    static let summary = "unseal or seal the daemon (shares custody): unseal, seal, status"
    static let help = """
        usage: cardvault operator <action> [--json] [--data-dir DIR] [--config FILE]

        actions (docs/key-custody.md):
          unseal            read one key share from standard input (never from the command
                            line; not echoed on a terminal) and give it to the sealed daemon; prints
                            the progress ("2 of 3"). A mistyped share is refused at once, naming its
                            index; with the threshold reached the daemon rebuilds its master key and
                            serves. Several daemons (PostgreSQL): give --data-dir once per daemon
          unseal --reset    drop the shares given so far (they are dropped after 10 minutes anyway)
          seal              drop every key from the daemon's memory; it answers 503 until unsealed
          status [--json]   sealed or not, and the unseal progress

        The daemon is reached through its admin socket (<data-dir>/admin.sock); the caller's uid is
        recorded with each share (never the share) in <data-dir>/custody-audit.log.
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        guard let action = arguments.positional() else {
            throw UsageError("missing action (try `cardvault operator --help`)")
        }
        let json = arguments.flag("--json")
        let reset = arguments.flag("--reset")
        var directories: [String] = []
        while let directory = try arguments.option("--data-dir") { directories.append(directory) }
        if directories.isEmpty {
            var rest = arguments
            directories = [try StoreAccess.parse(&rest).dataDirectory]
            arguments = rest
        } else {
            _ = try arguments.option("--config")
        }
        try arguments.finish()
        switch action {
        case "unseal":
            if reset {
                for directory in directories { report(try call(directory, "operator.reset"), json: json) }
                return 0
            }
            guard let share = ShareInput.line(prompt: "key share: ") else {
                throw CommandFailure("no share on standard input")
            }
            for directory in directories {
                report(try call(directory, "operator.unseal", ["share": .string(share)]), json: json)
            }
            return 0
        case "seal":
            for directory in directories {
                _ = try call(directory, "operator.seal")
                try waitUntilSealed(directory)
            }
            print("sealed: every key was dropped from memory; unseal with `cardvault operator unseal`")
            return 0
        case "status":
            var sealedAny = false
            for directory in directories {
                let status = try call(directory, "operator.status")
                sealedAny = sealedAny || status["sealed"] == .bool(true)
                report(status, json: json)
            }
            return sealedAny ? 2 : 0
        default:
            throw UsageError("unknown action '\(action)' (try `cardvault operator --help`)")
        }
    }

    private static func call(
        _ directory: String, _ command: String, _ arguments: [String: AdminValue] = [:]
    ) throws -> AdminValue {
        let socket = StoreAdminCommands.socketPath(dataDirectory: directory)
        do {
            return try AdminClient(path: socket).call(command, arguments: arguments)
        } catch let error as AdminError where error.code == AdminError.unknownCommand {
            throw CommandFailure(
                "the daemon on \(directory) keeps its master key in a file or an HSM: there is nothing to unseal")
        } catch let error as AdminError {
            throw CommandFailure(error.message)
        }
    }

    /// Waits (up to 30 s) until the daemon answers sealed: it stops serving, closes its store and drops the keys
    /// before its sealed admin socket answers.
    private static func waitUntilSealed(_ directory: String) throws {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let status = try? call(directory, "operator.status"), status["sealed"] == .bool(true) { return }
            usleep(50_000)
        }
        throw CommandFailure("the daemon on \(directory) did not report sealed within 30 s")
    }

    private static func report(_ status: AdminValue, json: Bool) {
        if json {
            print(KeysCommand.jsonText(status))
        } else if status["sealed"] == .bool(false) {
            print("unsealed")
        } else {
            let threshold = status["threshold"]?.intValue.map(String.init) ?? "?"
            print("sealed: unseal progress \(status["progress"]?.intValue ?? 0) of \(threshold)")
        }
    }
}

/// Key shares from standard input, never from the command line: on a terminal each is asked for on stderr and not
/// echoed; otherwise lines are read as they come.
enum ShareInput {
    /// One share line (trimmed), nil at the end of the input.
    static func line(prompt: String) -> String? {
        guard isatty(STDIN_FILENO) == 1 else {
            return readLine(strippingNewline: true)?.trimmingCharacters(in: .whitespaces)
        }
        FileHandle.standardError.write(Data(prompt.utf8))
        var saved = termios()
        tcgetattr(STDIN_FILENO, &saved)
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet)
        defer {
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
            FileHandle.standardError.write(Data("\n".utf8))
        }
        return readLine(strippingNewline: true)?.trimmingCharacters(in: .whitespaces)
    }

    /// Share lines until the end of the input, or (on a terminal) an empty line.
    static func lines(prompt: String) -> [String] {
        var lines: [String] = []
        while let line = line(prompt: prompt + " \(lines.count + 1) (empty line when done): ") {
            if line.isEmpty {
                if isatty(STDIN_FILENO) == 1 { break }
                continue
            }
            lines.append(line)
        }
        return lines
    }
}
