import Dispatch
public import Foundation
import VaultCore

#if canImport(Glibc)
import Glibc
#endif

/// Runs the built `cardvault` binary and captures its output, as argument-parser's
/// `AssertExecuteCommand` does. (The CLI tests' and the app tests' one way to start the binary; ``ChildProcess``
/// for one that keeps running.)
public struct CLIResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
}

public enum CLIProcess {
    /// The `cardvault` binary under test: `CARDVAULT_BIN` when set (`make test` points it at the release build,
    /// the binary `make run` starts), else the one next to the test bundle in the build directory.
    public static var binary: URL {
        if let path = ProcessInfo.processInfo.environment["CARDVAULT_BIN"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        var url = Bundle.main.bundleURL
        // The xctest bundle (or swiftpm-testing-helper) lives in the build products directory.
        while !FileManager.default.fileExists(atPath: url.appendingPathComponent("cardvault").path) {
            let parent = url.deletingLastPathComponent()
            if parent == url { break }
            url = parent
        }
        return url.appendingPathComponent("cardvault")
    }

    /// Runs `cardvault` with `arguments`, feeding `stdin`, and waits for it (in `directory`, when
    /// given, else in this process's working directory).
    public static func run(
        _ arguments: [String], stdin: String = "", environment: [String: String]? = nil, directory: String? = nil
    ) throws -> CLIResult {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        input.fileHandleForWriting.write(Data(stdin.utf8))
        try input.fileHandleForWriting.close()
        let outData = output.fileHandleForReading.readDataToEndOfFile()
        let errData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return CLIResult(
            status: process.terminationStatus,
            stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self)
        )
    }
}

/// A `cardvault` child whose stdout is collected as it arrives.
public final class ChildProcess: Sendable {
    private let process: Process
    private let input: Pipe
    private let collected = OutputBuffer()
    private let finished = DispatchSemaphore(value: 0)

    /// Starts `cardvault` (``CLIProcess/binary``) with `arguments`; `environment` replaces the process's own.
    public init(arguments: [String], environment: [String: String]? = nil) throws {
        process = Process()
        process.executableURL = CLIProcess.binary
        process.arguments = arguments
        if let environment { process.environment = environment }
        let output = Pipe()
        input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        process.standardError = output
        try process.run()
        let reader = output.fileHandleForReading
        let thread = Thread { [collected, finished] in
            while true {
                let data = reader.availableData
                if data.isEmpty { break }
                collected.bytes.withLock { $0 += data }
            }
            finished.signal()
        }
        thread.start()
    }

    public var output: String { String(decoding: collected.bytes.withLock { $0 }, as: UTF8.self) }

    /// Lines ending in a newline (a line cut by the kill is left out).
    public func completeLines() -> [Substring] {
        let text = output
        guard let end = text.lastIndex(of: "\n") else { return [] }
        return text[..<end].split(separator: "\n")
    }

    /// Waits for a line starting with `prefix`; nil on timeout or exit.
    public func waitForLine(prefix: String, timeout: TimeInterval) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let line = completeLines().first(where: { $0.hasPrefix(prefix) }) { return String(line) }
            if !process.isRunning {
                return completeLines().first(where: { $0.hasPrefix(prefix) }).map(String.init)
            }
            usleep(2000)
        }
        return nil
    }

    /// Closes the child's stdin (asks `store-exercise serve` to finish) and waits for it.
    @discardableResult
    public func finish() -> Int32 {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
        finished.wait()
        return process.terminationStatus
    }

    /// SIGTERM (a graceful stop), then waits for the process and for the end of its output; its exit status.
    @discardableResult
    public func terminate() -> Int32 {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        finished.wait()
        return process.terminationStatus
    }

    /// SIGKILL, then waits for the process and for the end of its output.
    public func kill() {
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        finished.wait()
    }
}

/// Bytes a child wrote so far.
final class OutputBuffer: Sendable {
    let bytes = Locked<[UInt8]>([])
}
