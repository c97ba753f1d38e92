import CardVaultTesting
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The operator commands of issue #22 (item 4), each against the release binary: the checkout commands find the
/// daemon from the configuration, credentials only after a bind, `clients rotate-key|remove`, `--json` lists and the
/// `clients list` header, the retire and rotate-master messages, progress on stderr, and damaged records.
@Suite(.serialized) struct OperatorCommandTests {
    private func run(_ arguments: [String], _ sandbox: CLISandbox) throws -> CLIResult {
        try CLIProcess.run(arguments + ["--data-dir", sandbox.data, "--keys-dir", sandbox.keys])
    }

    private static func port(_ daemon: LiveDaemon) -> Int { Int(daemon.url.split(separator: ":").last ?? "") ?? 0 }

    // MARK: checkout: the daemon from the configuration

    @Test func checkoutFindsTheDaemonFromTheConfigurationServeReads() throws {
        let daemon = try LiveDaemon()
        defer { daemon.stop() }
        let port = Self.port(daemon)
        var environment = ProcessInfo.processInfo.environment
        environment["CARDVAULT_API_KEY"] = daemon.apiKey
        environment["CARDVAULT_URL"] = nil
        // The listen address as `serve` reads it: from the environment ...
        environment["CARDVAULT_LISTEN"] = "127.0.0.1:\(port)"
        let fromEnvironment = try CLIProcess.run(
            ["checkout", "list", "--client-id", daemon.clientId], environment: environment)
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.stderr)")
        #expect(fromEnvironment.stdout.hasPrefix(#"{"checkouts":["#))
        // ... and from the file given with --config (a wildcard address is reached on loopback).
        environment["CARDVAULT_LISTEN"] = nil
        let sandbox = try CLISandbox()
        let file = try sandbox.write(#"{"listen": "0.0.0.0:\#(port)"}"#, to: "cardvault.json")
        let add = try CLIProcess.run(
            [
                "checkout", "add", "--client-id", daemon.clientId, "--callback-prefix", "https://shop.example/return",
                "--card-types", "visa", "--merchant-name", "Fancy Shop", "--config", file,
            ], environment: environment)
        #expect(add.status == 0, "\(add.stderr)")
        #expect(add.stdout.contains(#""merchantName":"Fancy Shop""#))
        // A port picked at start-up cannot be found: a usage error saying to give --url, not a failed connection.
        let zero = try sandbox.write(#"{"listen": "127.0.0.1:0"}"#, to: "zero.json")
        let refused = try CLIProcess.run(
            ["checkout", "list", "--client-id", daemon.clientId, "--config", zero], environment: environment)
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("give --url"))
        // A configured address nobody listens on: 69, naming it.
        let closed = try sandbox.write(#"{"listen": "127.0.0.1:9"}"#, to: "closed.json")
        let unreachable = try CLIProcess.run(
            ["checkout", "list", "--client-id", daemon.clientId, "--config", closed], environment: environment)
        #expect(unreachable.status == 69)
        #expect(unreachable.stderr.contains("http://127.0.0.1:9"))
    }

    // MARK: serve: credentials only after the bind

    @Test func developmentCredentialsArePrintedOnlyAfterASuccessfulBind() throws {
        let holder = try LiveDaemon()
        defer { holder.stop() }
        let sandbox = try CLISandbox()
        var environment = ProcessInfo.processInfo.environment
        environment["CARDVAULT_DATA_DIR"] = sandbox.data
        environment["CARDVAULT_KEYS_DIR"] = sandbox.keys
        environment["CARDVAULT_LISTEN"] = "127.0.0.1:\(Self.port(holder))"  // taken by the other daemon
        let config = try sandbox.write("{}", to: "cardvault.json")
        let failed = try ChildProcess(arguments: ["serve", "--config", config], environment: environment)
        let status = failed.finish()  // the bind fails: it exits by itself
        #expect(status == 1)
        #expect(failed.output.contains("ddress already in use") || failed.output.contains("bind"), "\(failed.output)")
        #expect(!failed.output.contains("development client created"))
        #expect(!failed.output.contains("ApiKey"))
        // No client was made either: the next start on a free port creates and prints it.
        environment["CARDVAULT_LISTEN"] = "127.0.0.1:0"
        let second = try ChildProcess(arguments: ["serve", "--config", config], environment: environment)
        defer { second.terminate() }
        let credentials = second.waitForLine(prefix: "development client created", timeout: 30)
        #expect(credentials?.contains("ClientId=dev ApiKey=") == true)
        let serving = second.waitForLine(prefix: "cardvault serving on", timeout: 30)
        #expect(serving != nil)
    }

    // MARK: clients rotate-key | remove, list header and --json

    @Test func rotateKeyAndRemoveEndTheOldCredentialsAtOnce() throws {
        let daemon = try LiveDaemon()
        defer { daemon.stop() }
        let port = Self.port(daemon)
        let place = ["--data-dir", daemon.dataDirectory, "--keys-dir", daemon.keysDirectory]
        let added = try CLIProcess.run(["clients", "add", "Rotating Shop", "--json"] + place)
        #expect(added.status == 0, "\(added.stderr)")
        let first = try #require(try JSONSerialization.jsonObject(with: Data(added.stdout.utf8)) as? [String: String])
        let clientId = try #require(first["ClientId"])
        let oldKey = try #require(first["ApiKey"])

        func token(_ key: String) throws -> String? {
            let (status, body) = try ServeCommandTests.request(
                port: port, method: "POST", path: "/v2.01/oauth/token",
                headers: [
                    "Authorization": "Basic " + Data("\(clientId):\(key)".utf8).base64EncodedString(),
                    "Content-Type": "application/x-www-form-urlencoded",
                ], body: "grant_type=client_credentials")
            guard status == 200 else { return nil }
            return (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["access_token"]
                as? String
        }
        func wallets(_ bearer: String) throws -> Int {
            try ServeCommandTests.request(
                port: port, method: "GET", path: "/v2.01/\(clientId)/users/nobody/wallets",
                headers: ["Authorization": "Bearer " + bearer]
            ).0
        }
        let oldToken = try #require(try token(oldKey))
        #expect(try wallets(oldToken) != 401)

        let rotated = try CLIProcess.run(["clients", "rotate-key", clientId, "--json"] + place)
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let second = try #require(
            try JSONSerialization.jsonObject(with: Data(rotated.stdout.utf8)) as? [String: String])
        let newKey = try #require(second["ApiKey"])
        #expect(newKey != oldKey && newKey.count >= 32)
        #expect(try token(oldKey) == nil)
        #expect(try wallets(oldToken) == 401)  // the token issued with the old key is revoked
        let newToken = try #require(try token(newKey))
        #expect(try wallets(newToken) != 401)

        let plain = try CLIProcess.run(["clients", "list"] + place)
        let header = plain.stdout.split(separator: "\n").first.map(String.init)
        #expect(header == "CLIENT_ID\tNAME\tCREATED")
        #expect(plain.stdout.contains(clientId + "\tRotating Shop\t"))
        #expect(!plain.stdout.contains(newKey))

        let removed = try CLIProcess.run(["clients", "remove", clientId] + place)
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(removed.stdout.contains("removed client \(clientId)"))
        #expect(try token(newKey) == nil)
        #expect(try wallets(newToken) == 401)
        let listed = try CLIProcess.run(["clients", "list", "--json"] + place)
        let items = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
        #expect(!items.contains { $0["ClientId"] as? String == clientId })
        #expect(items.allSatisfy { ($0["CreationDate"] as? String)?.hasSuffix("Z") == true })
        // The id is never handed out again, and a removed client cannot be removed or rotated twice.
        #expect(try CLIProcess.run(["clients", "add", "Rotating Shop"] + place).status == 1)
        let again = try CLIProcess.run(["clients", "remove", clientId] + place)
        #expect(again.status == 1)
        #expect(again.stderr.contains("no client \(clientId)"))
        #expect(try CLIProcess.run(["clients", "rotate-key", clientId] + place).status == 1)
    }

    @Test(arguments: [["clients", "remove"], ["clients", "rotate-key"], ["clients", "rotate-key", "a", "b"]])
    func clientsUsageErrorsExit64(arguments: [String]) throws {
        let result = try CLIProcess.run(arguments)
        #expect(result.status == 64, "\(result.stderr)")
    }

    // MARK: keys

    @Test func keysListJSONRetireAndRotateMasterMessages() throws {
        let sandbox = try CLISandbox()
        _ = try CLIProcess.run(["keys", "init", "--keys-dir", sandbox.keys])
        #expect(try run(["store-exercise", "write", "--count", "10", "--writers", "1"], sandbox).status == 0)
        let listed = try run(["keys", "list", "--json"], sandbox)
        #expect(listed.status == 0, "\(listed.stderr)")
        let keys = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
        #expect(keys.count == 1)
        #expect(keys.first?["version"] as? Int == 1 && keys.first?["state"] as? String == "current")
        #expect((keys.first?["records"] as? Int ?? 0) > 0)

        // The current version: rotate first (not "rewrap first", which cannot help).
        let current = try run(["keys", "retire", "1"], sandbox)
        #expect(current.status == 1)
        #expect(current.stderr.contains("is the current one"))
        #expect(current.stderr.contains("cardvault keys rotate"))
        #expect(!current.stderr.contains("rewrap` first"))

        let oldKey = try Data(contentsOf: URL(fileURLWithPath: sandbox.keys + "/master.key"))
        let rotated = try run(["keys", "rotate-master"], sandbox)
        #expect(rotated.status == 0, "\(rotated.stderr)")
        // No copy of the old key stays behind: the keys directory holds the new key file only.
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.keys) == ["master.key"])
        let newKey = try Data(contentsOf: URL(fileURLWithPath: sandbox.keys + "/master.key"))
        #expect(newKey.count == 32 && newKey != oldKey)
        #expect(rotated.stdout.contains("the old key file was overwritten and removed"))
        #expect(!rotated.stdout.contains(oldKey.base64EncodedString()))
        #expect(try run(["keys", "rotate-master"], sandbox).status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.keys) == ["master.key"])
        #expect(try run(["verify"], sandbox).status == 0)
    }

    @Test func verifyAndRewrapSendProgressToStandardError() throws {
        let sandbox = try CLISandbox()
        _ = try CLIProcess.run(["keys", "init", "--keys-dir", sandbox.keys])
        #expect(try run(["store-exercise", "write", "--count", "10", "--writers", "1"], sandbox).status == 0)
        let verify = try run(["verify"], sandbox)
        #expect(verify.status == 0)
        #expect(verify.stdout.split(separator: "\n").map(String.init) == ["verified 12 records: all authentic"])
        #expect(verify.stderr.contains("verify: 12/12 records"))
        _ = try run(["keys", "rotate"], sandbox)
        let rewrap = try run(["keys", "rewrap"], sandbox)
        #expect(rewrap.stdout.split(separator: "\n").count == 1)
        #expect(rewrap.stderr.contains("rewrap: "))
    }

    // MARK: damaged records

    /// Flips a ciphertext byte of the live frame of the first record of `collection` in segment 1; returns its id.
    private static func tamper(collection: String, in data: String) throws -> String {
        let segment = data + "/segments/00000001.seg"
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: segment)))
        var offset = 16
        var found: (offset: Int, id: String)?
        while offset + 24 < bytes.count {
            let length = Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16
            guard length > 0 else { break }
            let collectionLength = Int(bytes[offset + 6])
            let namesEnd = offset + 24 + collectionLength + Int(bytes[offset + 7])
            let name = String(decoding: bytes[offset + 24..<offset + 24 + collectionLength], as: UTF8.self)
            if name == collection {
                // The last frame of the record is the live one.
                found = (
                    namesEnd + 14, String(decoding: bytes[offset + 24 + collectionLength..<namesEnd], as: UTF8.self)
                )
            }
            offset += length
        }
        let place = try #require(found)
        bytes[place.offset] ^= 0x20
        try Data(bytes).write(to: URL(fileURLWithPath: segment))
        return place.id
    }

    /// True once a line of the child's output satisfies `test` (the log is written in batches of up to 200 ms).
    private static func eventually(_ child: ChildProcess, _ test: (Substring) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            if child.completeLines().contains(where: test) { return true }
            usleep(20_000)
        }
        return false
    }

    @Test func aDamagedRecordIsAnErrorWithIdCountedAtStartUpAndNamedByVerify() throws {
        let sandbox = try CLISandbox()
        var environment = ProcessInfo.processInfo.environment
        environment["CARDVAULT_DATA_DIR"] = sandbox.data
        environment["CARDVAULT_KEYS_DIR"] = sandbox.keys
        environment["CARDVAULT_LISTEN"] = "127.0.0.1:0"
        let config = try sandbox.write("{}", to: "cardvault.json")
        func start() throws -> (ChildProcess, Int) {
            let child = try ChildProcess(arguments: ["serve", "--config", config], environment: environment)
            let line = try #require(child.waitForLine(prefix: "cardvault serving on", timeout: 30))
            return (child, Int(line.split(separator: ":").last ?? "") ?? 0)
        }
        var (daemon, port) = try start()
        let credentials = daemon.completeLines().first { $0.hasPrefix("development client created") } ?? ""
        let apiKey = credentials.split(separator: " ").first { $0.hasPrefix("ApiKey=") }.map { String($0.dropFirst(7)) }
        let basic = "Basic " + Data("dev:\(apiKey ?? "")".utf8).base64EncodedString()
        let (_, tokenBody) = try ServeCommandTests.request(
            port: port, method: "POST", path: "/v2.01/oauth/token",
            headers: ["Authorization": basic, "Content-Type": "application/x-www-form-urlencoded"],
            body: "grant_type=client_credentials")
        let token =
            (try? JSONSerialization.jsonObject(with: Data(tokenBody.utf8)) as? [String: Any])?["access_token"]
            as? String ?? ""
        let bearer = ["Authorization": "Bearer " + token, "Content-Type": "application/json"]
        let (created, userBody) = try ServeCommandTests.request(
            port: port, method: "POST", path: "/v2.01/dev/users/natural", headers: bearer,
            body:
                #"{"FirstName":"Dam","LastName":"Aged","Email":"d@example.com","Birthday":188352000,"Nationality":"FR","CountryOfResidence":"FR","TermsAndConditionsAccepted":true,"UserCategory":"PAYER"}"#
        )
        #expect(created == 200, "\(userBody)")
        let userId =
            (try? JSONSerialization.jsonObject(with: Data(userBody.utf8)) as? [String: Any])?["Id"] as? String ?? ""
        #expect(daemon.terminate() == 0)

        let recordId = try Self.tamper(collection: "users", in: sandbox.data)
        (daemon, port) = try start()
        let (status, body) = try ServeCommandTests.request(
            port: port, method: "GET", path: "/v2.01/dev/users/\(userId)", headers: bearer)
        #expect(status == 500)
        let error = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        #expect(error["Type"] as? String == "record_damaged")
        let errorId = try #require(error["Id"] as? String)
        #expect(!errorId.isEmpty)
        #expect((error["Message"] as? String)?.contains("cardvault verify") == true)
        // The operator's log names the record with the request id the error's Id starts with.
        let requestId = String(errorId.split(separator: "#").first ?? "")
        #expect(
            Self.eventually(daemon) {
                $0.contains(#""msg":"damaged record""#) && $0.contains(requestId) && $0.contains("users/\(recordId)")
            })
        // verify, through the running daemon, names it.
        let verify = try CLIProcess.run(["verify"], environment: environment)
        #expect(verify.status == 1)
        #expect(verify.stdout.contains("FAILED users/\(recordId)"))
        #expect(daemon.terminate() == 0)

        // The next start-up counts it (and says so as a warning); /metrics shows it.
        (daemon, port) = try start()
        defer { daemon.terminate() }
        #expect(
            Self.eventually(daemon) { $0.contains(#""msg":"record store opened""#) && $0.contains(#""damaged":1"#) })
        #expect(Self.eventually(daemon) { $0.contains("damaged records in the store") })
        let (_, metrics) = try ServeCommandTests.request(port: port, method: "GET", path: "/metrics")
        #expect(metrics.contains("cardvault_store_damaged_records 1\n"))
        let (again, _) = try ServeCommandTests.request(
            port: port, method: "GET", path: "/v2.01/dev/users/\(userId)", headers: bearer)
        #expect(again == 500)
    }
}
