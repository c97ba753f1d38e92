import Foundation
import VaultCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Kills a writing `cardvault` process with SIGKILL at random moments, again and again; after
/// each restart every write it acknowledged must read back intact (the child checks them all
/// before it writes more). `CARDVAULT_CRASH_ITERATIONS` raises the count (default 50).
@Suite struct StoreCrashTests {
    @Test func everyAcknowledgedWriteSurvivesRepeatedSIGKILL() throws {
        let iterations = ProcessInfo.processInfo.environment["CARDVAULT_CRASH_ITERATIONS"].flatMap { Int($0) } ?? 50
        let sandbox = try CLISandbox()
        #expect(try CLIProcess.run(["keys", "init", "--keys-dir", sandbox.keys]).status == 0)
        var acked: [String: UInt64] = [:]
        var generator = SystemRandomNumberGenerator()
        for iteration in 0...iterations {
            let ackFile = sandbox.root + "/acked.txt"
            let listing = acked.map { "\($0.key) \($0.value)\n" }.joined()
            try Data(listing.utf8).write(to: URL(fileURLWithPath: ackFile))
            let child = try ChildProcess(arguments: [
                "store-exercise", "write", "--data-dir", sandbox.data, "--keys-dir", sandbox.keys, "--acked", ackFile,
                "--writers", "8",
            ])
            // Wait until it has recovered and checked every acknowledged record.
            guard let verified = child.waitForLine(prefix: "verified ", timeout: 60) else {
                child.kill()
                Issue.record("iteration \(iteration): no verification; output: \(child.output.suffix(2000))")
                return
            }
            #expect(verified.hasPrefix("verified \(acked.count) "), "iteration \(iteration): \(verified)")
            if iteration == iterations {
                child.kill()
                break
            }
            // Then kill it somewhere in the middle of its writes.
            usleep(UInt32.random(in: 5_000...60_000, using: &generator))
            child.kill()
            let before = acked.count
            for line in child.completeLines() where line.hasPrefix("ack ") {
                let parts = line.split(separator: " ")
                guard parts.count == 3, let version = UInt64(parts[2]) else { continue }
                acked[String(parts[1]), default: 0] = max(acked[String(parts[1])] ?? 0, version)
            }
            #expect(!child.output.contains("FAIL"), "iteration \(iteration): \(child.output.prefix(2000))")
            #expect(acked.count >= before)
        }
        #expect(acked.count > iterations * 10)
    }
}

/// A temporary directory with `data/` and `keys/` paths under it, removed at the end.
final class CLISandbox {
    let root: String
    var data: String { root + "/data" }
    var keys: String { root + "/keys" }

    init() throws {
        var template = Array("/tmp/cv-cli-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
        root = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }
}

/// A `cardvault` child whose stdout is collected as it arrives.
final class ChildProcess: Sendable {
    private let process: Process
    private let input: Pipe
    private let collected = OutputBuffer()
    private let finished = DispatchSemaphore(value: 0)

    init(arguments: [String]) throws {
        process = Process()
        process.executableURL = CLIProcess.binary
        process.arguments = arguments
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

    var output: String { String(decoding: collected.bytes.withLock { $0 }, as: UTF8.self) }

    /// Lines ending in a newline (a line cut by the kill is left out).
    func completeLines() -> [Substring] {
        let text = output
        guard let end = text.lastIndex(of: "\n") else { return [] }
        return text[..<end].split(separator: "\n")
    }

    /// Waits for a line starting with `prefix`; nil on timeout or exit.
    func waitForLine(prefix: String, timeout: TimeInterval) -> String? {
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
    func finish() -> Int32 {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
        finished.wait()
        return process.terminationStatus
    }

    /// SIGKILL, then waits for the process and for the end of its output.
    func kill() {
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        finished.wait()
    }
}

/// Bytes a child wrote so far.
final class OutputBuffer: Sendable {
    let bytes = Locked<[UInt8]>([])
}
