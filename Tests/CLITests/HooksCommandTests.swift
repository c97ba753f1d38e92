import CardVaultTesting
import Foundation
import Testing

/// `cardvault hooks` on the files of a stopped daemon: usage errors, an empty list, and a rotated secret that is
/// printed once and never listed.
@Suite struct HooksCommandTests {
    @Test func usageAndTheOfflineCommands() throws {
        let sandbox = try CLISandbox()
        let where_ = ["--data-dir", sandbox.data, "--keys-dir", sandbox.keys]
        _ = try CLIProcess.run(["keys", "init", "--keys-dir", sandbox.keys])
        #expect(try CLIProcess.run(["hooks", "--help"]).stdout.contains("rotate-secret"))
        #expect(try CLIProcess.run(["hooks"] + where_).status == 64)
        #expect(try CLIProcess.run(["hooks", "replay", "shop"] + where_).status == 64)
        #expect(try CLIProcess.run(["hooks", "bogus"] + where_).status == 64)

        let added = try CLIProcess.run(["clients", "add", "Shop", "--json"] + where_)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(added.stdout.utf8)) as? [String: String])
        let clientId = try #require(object["ClientId"])
        let rotated = try CLIProcess.run(["hooks", "rotate-secret", clientId] + where_)
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let secret = try #require(rotated.stdout.split(separator: "\n").first?.split(separator: " ").last)
        #expect(secret.hasPrefix("whsec_"))
        let listed = try CLIProcess.run(["hooks", "list", clientId, "--json"] + where_)
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout.contains("\"Hooks\"") && !listed.stdout.contains(String(secret)))
        let retried = try CLIProcess.run(["hooks", "retry"] + where_)
        #expect(retried.stdout.contains(#"{"Queued": 0}"#))
        let replayed = try CLIProcess.run(["hooks", "replay", clientId, "--from", "0"] + where_)
        #expect(replayed.status == 0, "\(replayed.stderr)")
        #expect(try CLIProcess.run(["hooks", "rotate-secret", "nobody"] + where_).status != 0)
    }
}
