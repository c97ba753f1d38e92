import Foundation

/// A live `cardvault serve` on a free loopback port with fresh data and keys directories, as the
/// HTTP suite's subject. Absent (nil) while the built binary has no `serve` command.
final class CardVaultServer {
    let port: Int
    private let child: ChildProcess

    /// The release binary the Makefile builds.
    static func binary(in context: SuiteContext) -> String { context.root + "/.build/release/cardvault" }

    /// True when the built `cardvault` lists a `serve` command.
    static func canServe(in context: SuiteContext) -> Bool {
        let binary = binary(in: context)
        guard FileManager.default.isExecutableFile(atPath: binary),
            let help = try? ChildProcess.run(binary, ["--help"], timeout: 10)
        else { return false }
        return help.stdout.split(separator: "\n").contains { $0.trimmingCharacters(in: .whitespaces).hasPrefix("serve") }
    }

    /// Starts the daemon with development keys made for this run and waits until it accepts.
    init(context: SuiteContext) throws {
        let home = try context.temporaryDirectory("cardvault")
        let keys = home + "/keys"
        let data = home + "/data"
        for directory in [keys, data] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            chmod(directory, 0o700)
        }
        var key = [UInt8](repeating: 0, count: 32)
        for index in key.indices { key[index] = UInt8.random(in: 0...255) }
        _ = FileManager.default.createFile(atPath: keys + "/master.key", contents: Data(key), attributes: [.posixPermissions: 0o600])
        port = try LoopbackPort.free()
        let environment = [
            "CARDVAULT_LISTEN": "127.0.0.1:\(port)",
            "CARDVAULT_PUBLIC_URL": "http://127.0.0.1:\(port)",
            "CARDVAULT_DATA_DIR": data,
            "CARDVAULT_KEYS_DIR": keys,
            "CARDVAULT_LOG_LEVEL": "warn",
        ]
        child = try ChildProcess.start(
            Self.binary(in: context), ["serve", "--config", context.root + "/config/cardvault.json"],
            environment: environment)
        let process = child
        do {
            try LoopbackPort.waitUntilAccepting(port, timeout: 20, what: "cardvault serve") { process.isRunning }
        } catch {
            let tail = child.errors().split(separator: "\n").suffix(2).joined(separator: " / ")
            child.stop()
            throw BenchFailure("\(error) \(tail)")
        }
    }

    /// The base URL.
    var url: String { "http://127.0.0.1:\(port)" }

    /// Stops the daemon gracefully (SIGTERM).
    func stop() { child.stop(grace: 10) }

    deinit { child.stop() }
}
