import Foundation
import Synchronization
import VaultCrypto

/// The `cardvault` command line: finds the subcommand and maps errors to exit codes. Every command awaits its work
/// (`serve` its whole ``ServiceGroup``) in one task on the concurrency pool.
@main
enum CardVaultCLI {
    /// The main thread waits for that task and exits with its status. An `async` entry point would instead leave
    /// the main thread in libdispatch's `dispatch_main` (a `sigsuspend` after the main thread's own exit), which
    /// valgrind 3.19 cannot run: callgrind, the bench's instruction counter, crashed on the daemon.
    static func main() {
        // Before OpenSSL allocates anything: its key schedules and states go to locked, wiped memory.
        SecureMemory.protectOpenSSLAllocations()
        let finished = DispatchSemaphore(value: 0)
        let status = Atomic<Int32>(0)
        Task.detached {
            status.store(await run(CommandLine.arguments), ordering: .relaxed)
            finished.signal()
        }
        finished.wait()
        exit(status.load(ordering: .relaxed))
    }

    /// Every subcommand, in the order `cardvault --help` lists them.
    static let commands: [any Command.Type] = [
        ServeCommand.self,
        VersionCommand.self,
        InspectCommand.self,
        KeysCommand.self,
        OperatorCommand.self,
        ClientsCommand.self,
        HooksCommand.self,
        VerifyCommand.self,
        StoreExerciseCommand.self,
        CheckoutCommand.self,
        DatabaseCommand.self,
    ]

    static var help: String {
        var text = "usage: cardvault <command> [options]\n\ncommands:\n"
        for command in commands where !command.summary.isEmpty {  // an empty summary hides a test-only command
            text += "  " + command.name.padding(toLength: 10, withPad: " ", startingAt: 0) + command.summary + "\n"
        }
        text += "\nRun `cardvault <command> --help` for a command's options."
        return text
    }

    /// Runs the command named in `argv` and returns the process exit status.
    static func run(_ argv: [String]) async -> Int32 {
        var rest = Array(argv.dropFirst())
        guard let word = rest.first else {
            printError("cardvault: missing command (try `cardvault --help`)")
            return 64
        }
        if word == "--help" || word == "-h" || word == "help" {
            print(help)
            return 0
        }
        guard let command = commands.first(where: { $0.name == word }) else {
            printError("cardvault: unknown command '\(word)' (try `cardvault --help`)")
            return 64
        }
        rest.removeFirst()
        var arguments = Arguments(rest)
        if arguments.wantsHelp() {
            print(command.help)
            return 0
        }
        do {
            return try await command.run(&arguments)
        } catch let error as UsageError {
            printError("cardvault \(command.name): \(error.reason)")
            return 64
        } catch let failure as CommandFailure {
            printError("cardvault \(command.name): \(failure.message)")
            return failure.status
        } catch {
            printError("cardvault \(command.name): \(error)")
            return 1
        }
    }
}
