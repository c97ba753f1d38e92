import CardVaultTesting
import Foundation
import Testing

/// `cardvault checkout`: usage errors offline, then add/list/remove against a live daemon.
@Suite(.serialized) struct CheckoutCommandTests {
    @Test func helpNamesTheActionsAndTheKeyRule() throws {
        let result = try CLIProcess.run(["checkout", "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("cardvault checkout add --client-id ID --callback-prefix URL"))
        #expect(result.stdout.contains("CARDVAULT_API_KEY"))
        #expect(try CLIProcess.run(["--help"]).stdout.contains("checkout"))
    }

    @Test(arguments: [
        ["checkout"], ["checkout", "frobnicate", "--client-id", "dev"], ["checkout", "add", "--card-types", "visa"],
        ["checkout", "add", "--client-id", "dev", "--card-types", "visa"],
        ["checkout", "add", "--client-id", "dev", "--callback-prefix", "https://a.example/"],
        ["checkout", "remove", "--client-id", "dev"], ["checkout", "list", "--client-id", "dev", "--bogus"],
        ["checkout", "pci", "--client-id", "dev"], ["checkout", "pci", "--client-id", "dev", "--on", "--off"],
        ["checkout", "pci", "--on"],
    ])
    func badUsageExits64(arguments: [String]) throws {
        let result = try CLIProcess.run(arguments, stdin: "key\n")
        #expect(result.status == 64, "\(arguments): \(result.stderr)")
        #expect(!result.stderr.isEmpty)
    }

    @Test func anUnreachableDaemonExits69() throws {
        let result = try CLIProcess.run(
            ["checkout", "list", "--client-id", "dev", "--url", "http://127.0.0.1:9"], stdin: "secret-key\n")
        #expect(result.status == 69)
        #expect(result.stderr.contains("cannot reach the daemon"))
        #expect(!result.stderr.contains("secret-key"))
    }

    @Test func addListRemoveAgainstALiveDaemon() throws {
        let daemon = try LiveDaemon()
        defer { daemon.stop() }
        let add = try CLIProcess.run(
            [
                "checkout", "add", "--client-id", daemon.clientId, "--url", daemon.url, "--callback-prefix",
                "https://shop.example/return", "--callback-prefix", "fancyshop://", "--card-types", "master,visa",
                "--checkout-id", "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6", "--merchant-name", "Fancy Shop",
            ], stdin: daemon.apiKey + "\n")
        #expect(add.status == 0, "\(add.stderr)")
        #expect(add.stdout.contains(#""checkoutId":"a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6""#))
        #expect(add.stdout.contains(#""allowedCardTypes":["master","visa"]"#))

        let refused = try CLIProcess.run(
            [
                "checkout", "add", "--client-id", daemon.clientId, "--url", daemon.url, "--callback-prefix",
                "http://evil.example/", "--card-types", "master,paypal",
            ], stdin: daemon.apiKey + "\n")
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("callbackUrlPrefixes[0]: callback URL prefix must use https"))
        #expect(refused.stderr.contains("allowedCardTypes:"))

        let wrongKey = try CLIProcess.run(
            ["checkout", "list", "--client-id", daemon.clientId, "--url", daemon.url], stdin: "not-the-key\n")
        #expect(wrongKey.status == 1)
        #expect(!wrongKey.stderr.contains("not-the-key"))

        var environment = ProcessInfo.processInfo.environment
        environment["CARDVAULT_API_KEY"] = daemon.apiKey
        let list = try CLIProcess.run(
            ["checkout", "list", "--client-id", daemon.clientId, "--url", daemon.url], environment: environment)
        #expect(list.status == 0)
        #expect(list.stdout.contains("a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"))
        let remove = try CLIProcess.run(
            [
                "checkout", "remove", "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6", "--client-id", daemon.clientId, "--url",
                daemon.url,
            ],
            environment: environment)
        #expect(remove.status == 0)
        let after = try CLIProcess.run(
            ["checkout", "list", "--client-id", daemon.clientId, "--url", daemon.url], environment: environment)
        #expect(!after.stdout.contains("a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"))

        // The PCI flag is the operator's, over the daemon's admin socket.
        let pci = try CLIProcess.run([
            "checkout", "pci", "--client-id", daemon.clientId, "--on", "--data-dir", daemon.dataDirectory,
        ])
        #expect(pci.status == 0, "\(pci.stderr)")
        #expect(pci.stdout.contains(#""pciCompliant": true"#))
        let nobody = try CLIProcess.run([
            "checkout", "pci", "--client-id", "nobody", "--off", "--data-dir", daemon.dataDirectory,
        ])
        #expect(nobody.status == 1)
        #expect(nobody.stderr.contains("no client nobody"))
    }
}

/// `cardvault serve` on a free port with its development client.
final class LiveDaemon {
    let child: ChildProcess
    var url = ""
    var clientId = ""
    var apiKey = ""
    let dataDirectory: String
    var keysDirectory: String { dataDirectory + "-keys" }

    /// `environment` adds to (or overrides) the daemon's `CARDVAULT_…` variables.
    init(environment extra: [String: String] = [:]) throws {
        let config = FileManager.default.temporaryDirectory.appendingPathComponent(
            "cardvault-\(UUID().uuidString).json")
        try Data(#"{"listen": "127.0.0.1:0"}"#.utf8).write(to: config)
        var environment = ProcessInfo.processInfo.environment
        environment["CARDVAULT_LISTEN"] = "127.0.0.1:0"
        let data = FileManager.default.temporaryDirectory.appendingPathComponent(
            "cardvault-checkout-\(UUID().uuidString)"
        ).path
        dataDirectory = data
        environment["CARDVAULT_DATA_DIR"] = data
        environment["CARDVAULT_KEYS_DIR"] = data + "-keys"
        environment.merge(extra) { _, new in new }
        child = try ChildProcess(arguments: ["serve", "--config", config.path], environment: environment)
        let credentials = child.waitForLine(prefix: "development client created", timeout: 30) ?? ""
        let serving = child.waitForLine(prefix: "cardvault serving on", timeout: 30) ?? ""
        for word in (credentials + " " + serving).split(separator: " ") {
            if word.hasPrefix("ClientId=") { clientId = String(word.dropFirst(9)) }
            if word.hasPrefix("ApiKey=") { apiKey = String(word.dropFirst(7)) }
            if word.hasPrefix("http://") { url = String(word) }
        }
        guard !url.isEmpty, !clientId.isEmpty, !apiKey.isEmpty else {
            stop()
            throw CocoaError(.fileReadUnknown)
        }
    }

    func stop() { child.terminate() }
}
