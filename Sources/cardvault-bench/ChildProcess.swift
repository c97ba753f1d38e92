import Foundation

/// A program the bench runs: to completion (`run`) or in the background (`start`, `stop`).
/// Output goes to files, never pipes, so a chatty child can never block on a full pipe.
final class ChildProcess {
    /// What a finished program left behind.
    struct Outcome {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    private let process = Process()
    private let outputPath: String
    private let errorPath: String
    let commandLine: String

    private init(_ executable: String, _ arguments: [String], environment: [String: String]?, directory: String?)
        throws
    {
        let resolved = try ChildProcess.resolve(executable)
        process.executableURL = URL(fileURLWithPath: resolved)
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let base = NSTemporaryDirectory() + "cardvault-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        outputPath = base + ".out"
        errorPath = base + ".err"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: outputPath)
        process.standardError = FileHandle(forWritingAtPath: errorPath)
        process.standardInput = FileHandle.nullDevice
        commandLine = ([executable] + arguments).joined(separator: " ")
    }

    deinit {
        if process.isRunning { process.terminate() }
        try? FileManager.default.removeItem(atPath: outputPath)
        try? FileManager.default.removeItem(atPath: errorPath)
    }

    /// Runs `executable` (a path, or a name looked up on PATH) to completion, killing it after
    /// `timeout` seconds.
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        directory: String? = nil, timeout: Double = 120
    ) throws -> Outcome {
        let child = try ChildProcess(executable, arguments, environment: environment, directory: directory)
        try child.process.run()
        let deadline = Date().addingTimeInterval(timeout)
        while child.process.isRunning {
            if Date() > deadline {
                child.process.terminate()
                child.process.waitUntilExit()
                throw BenchFailure("\(executable) did not finish within \(Int(timeout)) s")
            }
            usleep(2_000)
        }
        return Outcome(status: child.process.terminationStatus, stdout: child.output(), stderr: child.errors())
    }

    /// Runs like `run` and throws when the exit status is not 0, with the end of stderr.
    @discardableResult
    static func check(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        directory: String? = nil, timeout: Double = 120
    ) throws -> Outcome {
        let outcome = try run(executable, arguments, environment: environment, directory: directory, timeout: timeout)
        guard outcome.status == 0 else {
            let tail = outcome.stderr.split(separator: "\n").suffix(3).joined(separator: " / ")
            throw BenchFailure("\(executable) exited with \(outcome.status): \(tail)")
        }
        return outcome
    }

    /// Starts `executable` in the background.
    static func start(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil
    ) throws -> ChildProcess {
        let child = try ChildProcess(executable, arguments, environment: environment, directory: directory)
        try child.process.run()
        return child
    }

    /// True while the background program runs.
    var isRunning: Bool { process.isRunning }

    /// Sends SIGTERM, waits up to `grace` seconds, then SIGKILL.
    func stop(grace: Double = 5) {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(grace)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// What the program wrote to stdout so far.
    func output() -> String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    /// What the program wrote to stderr so far.
    func errors() -> String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

    /// The path of `name` on PATH (or `name` itself when it holds a slash).
    static func resolve(_ name: String) throws -> String {
        if name.contains("/") {
            guard FileManager.default.isExecutableFile(atPath: name) else { throw BenchFailure("\(name) not found") }
            return name
        }
        if let found = which(name) { return found }
        throw BenchFailure("\(name) not found on PATH")
    }

    /// The path of `name` on PATH (plus the sbin directories), or nil.
    static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin"] {
            let candidate = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
