import Foundation

/// One `cardvault` subcommand. Each lives in its own file, named for it, and is listed in
/// `main.swift`.
protocol Command: SendableMetatype {
    /// The word that selects it (`serve`, `keys`, `inspect`).
    static var name: String { get }
    /// One line for the command list.
    static var summary: String { get }
    /// The full `--help` text.
    static var help: String { get }
    /// Runs with the arguments after the command's name; returns the exit status.
    /// Throw ``UsageError`` for bad usage (exit 64).
    static func run(_ arguments: inout Arguments) async throws -> Int32
}

/// Bad usage: printed as one line on stderr, exit status 64 (EX_USAGE).
struct UsageError: Error {
    var reason: String
    init(_ reason: String) { self.reason = reason }
}

/// A failure the command reports and exits on (status 1 unless given).
struct CommandFailure: Error {
    var message: String
    var status: Int32
    init(_ message: String, status: Int32 = 1) {
        self.message = message
        self.status = status
    }
}

/// The arguments left to parse. Options are taken out by name; what is left must be consumed, or
/// ``finish()`` reports it as unexpected.
struct Arguments {
    private(set) var remaining: [String]

    init(_ arguments: [String]) { remaining = arguments }

    /// True when `--help` or `-h` was given (and removes it).
    mutating func wantsHelp() -> Bool {
        let before = remaining.count
        remaining.removeAll { $0 == "--help" || $0 == "-h" }
        return remaining.count != before
    }

    /// Takes `--name` if present.
    mutating func flag(_ name: String) -> Bool {
        guard let index = remaining.firstIndex(of: name) else { return false }
        remaining.remove(at: index)
        return true
    }

    /// Takes `--name VALUE` or `--name=VALUE` if present.
    mutating func option(_ name: String) throws -> String? {
        if let index = remaining.firstIndex(of: name) {
            guard index + 1 < remaining.count, !remaining[index + 1].hasPrefix("--") else {
                throw UsageError("\(name) needs a value")
            }
            let value = remaining[index + 1]
            remaining.removeSubrange(index...index + 1)
            return value
        }
        if let index = remaining.firstIndex(where: { $0.hasPrefix(name + "=") }) {
            let value = String(remaining[index].dropFirst(name.count + 1))
            remaining.remove(at: index)
            return value
        }
        return nil
    }

    /// Takes the next positional argument, if any.
    mutating func positional() -> String? {
        guard let index = remaining.firstIndex(where: { !$0.hasPrefix("-") || $0 == "-" }) else { return nil }
        return remaining.remove(at: index)
    }

    /// Fails with a usage error when anything was left unparsed.
    func finish() throws {
        if let first = remaining.first {
            throw UsageError(first.hasPrefix("-") ? "unknown option \(first)" : "unexpected argument \(first)")
        }
    }
}

/// Writes a line to standard error.
func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
