import CardVaultTesting
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `cardvault keys status`: seal counts per data key version, automatic rotation at the seal limit,
/// and counts that survive SIGKILL without ever falling below the seals made.
@Suite struct KeysStatusCommandTests {
    private func run(
        _ arguments: [String], _ sandbox: CLISandbox, environment: [String: String] = [:]
    ) throws
        -> CLIResult
    {
        var merged = ProcessInfo.processInfo.environment
        merged.merge(environment) { _, new in new }
        return try CLIProcess.run(
            arguments + ["--data-dir", sandbox.data, "--keys-dir", sandbox.keys], environment: merged)
    }

    private func status(_ sandbox: CLISandbox, environment: [String: String] = [:]) throws -> [String: Any] {
        let result = try run(["keys", "status", "--json"], sandbox, environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        let parsed = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
        return try #require(parsed as? [String: Any])
    }

    private func keys(_ status: [String: Any]) -> [[String: Any]] { status["keys"] as? [[String: Any]] ?? [] }

    private func acks(_ output: String) -> Int {
        output.split(separator: "\n").filter { $0.hasPrefix("ack ") }.count
    }

    @Test func statusShowsVersionsStatesRecordsSealsAndAgeInTextAndJSON() throws {
        let sandbox = try CLISandbox()
        _ = try CLIProcess.run(["keys", "init", "--keys-dir", sandbox.keys])
        let written = try run(
            ["store-exercise", "write", "--count", "100", "--writers", "2", "--rotate-after-seals", "50"], sandbox)
        #expect(written.status == 0)
        let sealed = acks(written.stdout)
        #expect(sealed > 120)  // 120 records, some updated

        let json = try status(sandbox)
        let versions = keys(json)
        // Every put was sealed under a version that had room: ceil(sealed / 50) versions at least.
        #expect(versions.count >= (sealed + 49) / 50)
        #expect(versions.map { $0["version"] as? Int ?? 0 } == Array(1...versions.count))
        #expect(versions.compactMap { $0["seals"] as? Int }.reduce(0, +) >= sealed)
        for key in versions { #expect((key["seals"] as? Int ?? .max) <= 50, "\(key)") }
        #expect(versions.compactMap { $0["records"] as? Int }.reduce(0, +) == 120)
        #expect(
            versions.map { $0["state"] as? String ?? "" } == Array(repeating: "decrypt-only", count: versions.count - 1)
                + ["current"])
        #expect(versions.last?["current"] as? Bool == true)
        #expect(json["currentVersion"] as? Int == versions.count)
        #expect((versions.first?["ageSeconds"] as? Int).map { $0 >= 0 && $0 < 3600 } == true)
        #expect((versions.first?["created"] as? String)?.hasSuffix("Z") == true)
        #expect(json["rotateAfterSeals"] as? Int == 1 << 30)
        #expect(json["rotateAfterDays"] as? Int == 90)
        // The limits come from the configuration, as for `serve`.
        let configured = try status(
            sandbox,
            environment: ["CARDVAULT_KEYS_ROTATE_AFTER_SEALS": "1000", "CARDVAULT_KEYS_ROTATE_AFTER_DAYS": "0"])
        #expect(configured["rotateAfterSeals"] as? Int == 1000)
        #expect(configured["rotateAfterDays"] is NSNull)

        let text = try run(["keys", "status"], sandbox)
        #expect(text.status == 0)
        let lines = text.stdout.split(separator: "\n")
        #expect(lines.first?.hasPrefix("VERSION  STATE") == true)
        #expect(lines.first?.hasSuffix("RECORDS   SEALS") == true)
        let last = try #require(versions.last)
        let currentLine = try #require(lines.first { $0.hasPrefix("\(versions.count) ") })
        #expect(currentLine.contains("current"))
        #expect(currentLine.hasSuffix(" \(last["seals"] as? Int ?? -1)"))
        #expect(currentLine.contains(" 0d "))
        #expect(text.stdout.contains("automatic rotation: after 1073741824 seals per data key, after 90 days"))
        #expect(
            text.stdout.contains(
                "current version \(versions.count): \(last["seals"] as? Int ?? -1) of 1073741824 seals used"))
        #expect(try run(["keys", "status", "--bogus"], sandbox).status == 64)
    }

    @Test func sealCountsNeverFallBelowTheAcknowledgedWritesAcrossSIGKILL() throws {
        let sandbox = try CLISandbox()
        #expect(try CLIProcess.run(["keys", "init", "--keys-dir", sandbox.keys]).status == 0)
        var acknowledged = 0
        var generator = SystemRandomNumberGenerator()
        for iteration in 0..<6 {
            let child = try ChildProcess(arguments: [
                "store-exercise", "write", "--data-dir", sandbox.data, "--keys-dir", sandbox.keys, "--writers", "8",
                "--rotate-after-seals", "300",
            ])
            guard child.waitForLine(prefix: "verified ", timeout: 60) != nil else {
                child.kill()
                Issue.record("iteration \(iteration): no start; output: \(child.output.suffix(2000))")
                return
            }
            usleep(UInt32.random(in: 20_000...120_000, using: &generator))
            child.kill()
            acknowledged += acks(child.output)
            let versions = keys(try status(sandbox))
            let seals = versions.compactMap { $0["seals"] as? Int }
            // Each acknowledged write was one seal; a killed process may have sealed more (or
            // reserved more), never fewer.
            #expect(seals.reduce(0, +) >= acknowledged, "iteration \(iteration): \(seals) for \(acknowledged) acks")
            for count in seals { #expect(count <= 300, "iteration \(iteration): \(seals)") }
        }
        #expect(acknowledged > 300)
    }

    @Test func theDaemonRotatesOnlineAndShowsSealsInStatusAndMetrics() throws {
        let daemon = try LiveDaemon(environment: ["CARDVAULT_KEYS_ROTATE_AFTER_SEALS": "3"])
        defer { daemon.stop() }
        func cli(_ arguments: [String]) throws -> CLIResult {
            try CLIProcess.run(arguments + ["--data-dir", daemon.dataDirectory, "--keys-dir", daemon.keysDirectory])
        }
        for index in 0..<4 {
            let added = try cli(["clients", "add", "client\(index)", "--json"])
            #expect(added.status == 0, "\(added.stderr)")
        }
        // Through the admin socket (the daemon holds the lock): the daemon's own limit.
        let result = try cli(["keys", "status", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(json["rotateAfterSeals"] as? Int == 3)
        let versions = keys(json)
        #expect(versions.count >= 2)
        for key in versions { #expect((key["seals"] as? Int ?? .max) <= 3) }
        let current = json["currentVersion"] as? Int ?? 0

        let port = Int(daemon.url.split(separator: ":").last ?? "") ?? 0
        let (status, body) = try ServeCommandTests.request(port: port, method: "GET", path: "/metrics")
        #expect(status == 200)
        #expect(body.contains("# TYPE cardvault_data_key_seals gauge"))
        #expect(body.contains("cardvault_data_key_current_version \(current)\n"))
        #expect(body.contains("cardvault_data_key_seal_limit 3\n"))
        #expect(body.contains("cardvault_data_key_seals{version=\"1\",state=\"decrypt-only\"} "))
        #expect(body.contains("cardvault_data_key_seals{version=\"\(current)\",state=\"current\"} "))
    }
}
