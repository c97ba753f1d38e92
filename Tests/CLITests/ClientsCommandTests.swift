import CardVaultTesting
import Foundation
import Testing

@Suite struct ClientsCommandTests {
    /// The `{"ClientId": …, "ApiKey": …}` line of `clients add --json`.
    private func credentials(_ result: CLIResult) throws -> (String, String) {
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: String])
        return (try #require(object["ClientId"]), try #require(object["ApiKey"]))
    }

    @Test func addPrintsCredentialsOnceAndListNeverShowsTheKey() throws {
        let sandbox = try CLISandbox()
        let where_ = ["--data-dir", sandbox.data, "--keys-dir", sandbox.keys]
        _ = try CLIProcess.run(["keys", "init", "--keys-dir", sandbox.keys])
        let added = try CLIProcess.run(["clients", "add", "Acme Shop", "--json"] + where_)
        #expect(added.status == 0, "\(added.stderr)")
        let (clientId, apiKey) = try credentials(added)
        #expect(!clientId.isEmpty)
        #expect(apiKey.count >= 32)

        let listed = try CLIProcess.run(["clients", "list", "--json"] + where_)
        #expect(listed.status == 0)
        #expect(listed.stdout.contains(clientId))
        #expect(!listed.stdout.contains(apiKey))
        // The key is stored only as a salted hash: no file of the store holds it.
        let files = FileManager.default.enumerator(atPath: sandbox.data)?.compactMap { $0 as? String } ?? []
        for file in files {
            let bytes = FileManager.default.contents(atPath: sandbox.data + "/" + file) ?? Data()
            #expect(bytes.range(of: Data(apiKey.utf8)) == nil, "\(file) holds the API key")
        }

        let again = try CLIProcess.run(["clients", "add", "Acme Shop"] + where_)
        #expect(again.status != 0)
        #expect(!again.stderr.isEmpty)
    }

    @Test(arguments: [["clients"], ["clients", "add"], ["clients", "frobnicate", "x"], ["clients", "list", "extra"]])
    func badUsageExits64(arguments: [String]) throws {
        let result = try CLIProcess.run(arguments)
        #expect(result.status == 64)
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test func addGoesThroughTheRunningDaemonAndTheKeyWorksAtOnce() throws {
        let daemon = try LiveDaemon()
        defer { daemon.stop() }
        // The daemon holds the directory's lock, so this can only succeed over its admin socket.
        let added = try CLIProcess.run(
            [
                "clients", "add", "live", "--json", "--data-dir", daemon.dataDirectory, "--keys-dir",
                daemon.keysDirectory,
            ])
        #expect(added.status == 0, "\(added.stderr)")
        let (clientId, apiKey) = try credentials(added)

        let port = Int(daemon.url.split(separator: ":").last ?? "") ?? 0
        func token(_ secret: String) throws -> (Int, String) {
            try ServeCommandTests.request(
                port: port, method: "POST", path: "/v2.01/oauth/token",
                headers: [
                    "Authorization": "Basic " + Data("\(clientId):\(secret)".utf8).base64EncodedString(),
                    "Content-Type": "application/x-www-form-urlencoded",
                ],
                body: "grant_type=client_credentials")
        }
        let (status, body) = try token(apiKey)
        #expect(status == 200)
        #expect(body.contains("\"token_type\":\"Bearer\""))
        #expect(try token("wrong").0 == 401)
    }
}
