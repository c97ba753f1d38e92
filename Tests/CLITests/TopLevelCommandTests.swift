import CardVaultTesting
import Testing

@Suite struct TopLevelCommandTests {
    @Test func versionNamesTheCLibraries() throws {
        let result = try CLIProcess.run(["version"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("cardvault "))
        #expect(result.stdout.contains("openssl OpenSSL 3"))
        #expect(result.stdout.contains("libmicrohttpd 0.9"))
    }

    @Test(arguments: [["frobnicate"], [], ["version", "--bogus"], ["version", "extra"]])
    func badUsageExits64WithOneLine(arguments: [String]) throws {
        let result = try CLIProcess.run(arguments)
        #expect(result.status == 64)
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stdout.isEmpty)
    }

    @Test func helpIsAvailableEverywhere() throws {
        let top = try CLIProcess.run(["--help"])
        #expect(top.status == 0)
        #expect(top.stdout.contains("version"))
        let sub = try CLIProcess.run(["version", "--help"])
        #expect(sub.status == 0)
        #expect(sub.stdout.contains("usage: cardvault version"))
    }
}
