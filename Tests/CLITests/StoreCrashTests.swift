import CardVaultTesting
import Foundation
import Testing
import VaultCore

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

/// The CLI tests' temporary data and keys directories.
typealias CLISandbox = TemporaryDirectory
