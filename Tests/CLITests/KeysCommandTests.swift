import CardVaultTesting
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct KeysCommandTests {
    private func run(_ arguments: [String], _ sandbox: CLISandbox) throws -> CLIResult {
        try CLIProcess.run(arguments + ["--data-dir", sandbox.data, "--keys-dir", sandbox.keys])
    }

    @Test func initCreatesAPrivate32ByteKeyOnceAndLeavesItAlone() throws {
        let sandbox = try CLISandbox()
        let first = try CLIProcess.run(["keys", "init", "--keys-dir", sandbox.keys])
        #expect(first.status == 0)
        #expect(first.stdout.contains("created master key"))
        let key = try Data(contentsOf: URL(fileURLWithPath: sandbox.keys + "/master.key"))
        #expect(key.count == 32)
        var status = stat()
        #expect(stat(sandbox.keys + "/master.key", &status) == 0)
        #expect(status.st_mode & 0o777 == 0o600)
        let second = try CLIProcess.run(["keys", "init", "--keys-dir", sandbox.keys])
        #expect(second.status == 0)
        #expect(second.stdout.contains("exists; left unchanged"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: sandbox.keys + "/master.key")) == key)
        // Key bytes never reach the output.
        #expect(!first.stdout.contains(key.base64EncodedString()))
    }

    @Test func offlineRotateRewrapRetireAndList() throws {
        let sandbox = try CLISandbox()
        _ = try CLIProcess.run(["keys", "init", "--keys-dir", sandbox.keys])
        #expect(try run(["store-exercise", "write", "--count", "100", "--writers", "2"], sandbox).status == 0)
        #expect(try run(["keys", "retire", "1"], sandbox).status == 1)
        let rotate = try run(["keys", "rotate"], sandbox)
        #expect(rotate.stdout.contains("version 2"))
        let before = try run(["keys", "list"], sandbox)
        #expect(before.stdout.contains("decrypt-only"))
        let refused = try run(["keys", "retire", "1"], sandbox)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("records still use data key version 1"))
        let rewrap = try run(["keys", "rewrap"], sandbox)
        #expect(rewrap.status == 0)
        #expect(rewrap.stderr.contains("rewrap: 120/120 records"))  // progress: plain lines on stderr off a terminal
        #expect(rewrap.stdout.contains("0 left on older data keys"))
        #expect(try run(["keys", "rewrap"], sandbox).stdout.contains("moved 0 records"))
        #expect(try run(["keys", "retire", "1"], sandbox).status == 0)
        let lines = try run(["keys", "list"], sandbox).stdout.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines[1].hasPrefix("1 ") && lines[1].hasSuffix("retired") && lines[1].contains(" 0 "))
        #expect(lines[2].hasPrefix("2 ") && lines[2].hasSuffix("current") && lines[2].contains(" 120 "))
        let oldKey = try Data(contentsOf: URL(fileURLWithPath: sandbox.keys + "/master.key"))
        #expect(try run(["keys", "rotate-master"], sandbox).status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: sandbox.keys + "/master.key")) != oldKey)
        #expect(try run(["verify"], sandbox).stdout.contains("verified 120 records: all authentic"))
    }

    /// An operator runs the commands in the daemon's environment: they must find its directories
    /// there (not ./data and ./keys of wherever they are run), as `serve` does.
    @Test func directoriesComeFromTheEnvironmentLikeServe() throws {
        let sandbox = try CLISandbox()
        let elsewhere = sandbox.root + "/elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        var environment = ProcessInfo.processInfo.environment
        environment["CARDVAULT_DATA_DIR"] = sandbox.data
        environment["CARDVAULT_KEYS_DIR"] = sandbox.keys
        let created = try CLIProcess.run(["keys", "init"], environment: environment, directory: elsewhere)
        #expect(created.status == 0)
        #expect(FileManager.default.fileExists(atPath: sandbox.keys + "/master.key"))
        #expect(try CLIProcess.run(["keys", "rotate"], environment: environment, directory: elsewhere).status == 0)
        #expect(FileManager.default.fileExists(atPath: sandbox.data + "/keyring.json"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty)
        // The flags still win over the environment.
        let other = try CLISandbox()
        _ = try CLIProcess.run(["keys", "init", "--keys-dir", other.keys])
        let listed = try CLIProcess.run(
            ["keys", "list", "--data-dir", other.data, "--keys-dir", other.keys], environment: environment,
            directory: elsewhere)
        #expect(listed.stdout.split(separator: "\n").count == 2)  // the header and version 1 only
        // A bad value is refused with the field's name, as `serve` refuses it.
        environment["CARDVAULT_LOG_LEVEL"] = "loud"
        let refused = try CLIProcess.run(["keys", "list"], environment: environment, directory: elsewhere)
        #expect(refused.status == 78)
        #expect(refused.stderr.contains("logLevel"))
    }

    @Test func badUsageExits64() throws {
        let sandbox = try CLISandbox()
        for arguments in [
            ["keys"], ["keys", "frob"], ["keys", "retire"], ["keys", "retire", "x"], ["keys", "list", "--bogus"],
        ] {
            let result = try run(arguments, sandbox)
            #expect(result.status == 64, "\(arguments)")
        }
    }

    @Test func verifyNamesTheRecordWithAFlippedByteAndOnlyThatOne() throws {
        let sandbox = try CLISandbox()
        _ = try CLIProcess.run(["keys", "init", "--keys-dir", sandbox.keys])
        #expect(try run(["store-exercise", "write", "--count", "20", "--writers", "1"], sandbox).status == 0)
        let segment = sandbox.data + "/segments/00000001.seg"
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: segment)))
        // Frames follow the 16-byte segment header: u32 length, ..., names after a 24-byte header.
        // Take the first "…b" record: the writer never updates those, so its frame is the live one.
        var offset = 16
        var id = ""
        while offset < bytes.count {
            let length = Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16
            let collectionLength = Int(bytes[offset + 6])
            let namesEnd = offset + 24 + collectionLength + Int(bytes[offset + 7])
            id = String(decoding: bytes[offset + 24 + collectionLength..<namesEnd], as: UTF8.self)
            if id.hasSuffix("b") {
                bytes[namesEnd + 12 + 2] ^= 0x20  // inside the ciphertext, after the nonce
                break
            }
            offset += length
        }
        #expect(id.hasSuffix("b"))
        try Data(bytes).write(to: URL(fileURLWithPath: segment))
        let result = try run(["verify"], sandbox)
        #expect(result.status == 1)
        let failed = result.stdout.split(separator: "\n").filter { $0.hasPrefix("FAILED") }
        #expect(failed == ["FAILED crash/\(id): record crash/\(id) failed authentication"])
        #expect(result.stdout.contains("verified 24 records: 1 failed"))
    }

    @Test func aSecondProcessIsToldTheDirectoryIsInUse() throws {
        let sandbox = try CLISandbox()
        _ = try CLIProcess.run(["keys", "init", "--keys-dir", sandbox.keys])
        let daemon = try ChildProcess(arguments: [
            "store-exercise", "serve", "--no-admin", "--data-dir", sandbox.data, "--keys-dir", sandbox.keys,
        ])
        #expect(daemon.waitForLine(prefix: "ready", timeout: 30) != nil)
        let result = try run(["keys", "list"], sandbox)
        #expect(result.status == 1)
        #expect(result.stderr.contains("is in use by another cardvault process (pid"))
        #expect(daemon.finish() == 0)
    }

    @Test func rotationUnderLoadThroughTheAdminSocketFailsNoRequest() throws {
        let sandbox = try CLISandbox()
        _ = try CLIProcess.run(["keys", "init", "--keys-dir", sandbox.keys])
        let daemon = try ChildProcess(arguments: [
            "store-exercise", "serve", "--data-dir", sandbox.data, "--keys-dir", sandbox.keys,
        ])
        #expect(daemon.waitForLine(prefix: "ready", timeout: 30) != nil)
        var status = stat()
        #expect(stat(sandbox.data + "/admin.sock", &status) == 0)
        #expect(status.st_mode & 0o777 == 0o600)
        usleep(200_000)
        let rotate = try run(["keys", "rotate"], sandbox)
        #expect(rotate.status == 0, "\(rotate.stderr)")
        usleep(200_000)
        let rewrap = try run(["keys", "rewrap"], sandbox)
        #expect(rewrap.status == 0, "\(rewrap.stderr)")
        #expect(rewrap.stdout.contains("0 left on older data keys"))
        let list = try run(["keys", "list"], sandbox).stdout.split(separator: "\n")
        #expect(list.count == 3)
        #expect(list[1].hasPrefix("1 ") && list[1].contains(" 0 "), "\(list)")
        #expect(try run(["keys", "retire", "1"], sandbox).status == 0)
        #expect(try run(["keys", "rotate-master"], sandbox).status == 0)
        let verify = try run(["verify"], sandbox)
        #expect(verify.status == 0, "\(verify.stdout)")
        #expect(daemon.finish() == 0)
        let summary = daemon.completeLines().last.map(String.init) ?? ""
        #expect(summary.hasPrefix("operations ") && summary.hasSuffix(" failures 0"), "\(daemon.output.suffix(1000))")
        #expect(!summary.hasPrefix("operations 0 "))
        // After the daemon stops, the CLI works on the files directly, with the rotated master key.
        #expect(try run(["verify"], sandbox).status == 0)
    }
}
