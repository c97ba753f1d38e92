import CardVaultTesting
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Two `cardvault serve` (the binary under test, the release build under `make test`) on one throw-away
/// PostgreSQL 15 database: a card registered through daemon A is read through daemon B.
@Suite(.serialized) struct PostgresPairLiveTests {
    static let binaries = "/usr/lib/postgresql/15/bin"
    static var installed: Bool { FileManager.default.isExecutableFile(atPath: binaries + "/initdb") }

    @Test(.enabled(if: installed, "PostgreSQL 15 is not installed"))
    func aCardRegisteredThroughAIsReadThroughB() async throws {
        let cluster = try ThrowawayCluster()
        defer { cluster.stop() }
        let home = try TemporaryDirectory(prefix: "cv-pair")
        var environment = ProcessInfo.processInfo.environment
        environment["CARDVAULT_DATABASE_URL"] = cluster.url
        environment["CARDVAULT_KEYS_DIR"] = home.keys
        environment["CARDVAULT_LISTEN"] = "127.0.0.1:0"
        let initialized = try CLIProcess.run(["keys", "init", "--keys-dir", home.keys], environment: environment)
        #expect(initialized.status == 0, "\(initialized.stderr)")
        let migrated = try CLIProcess.run(["db", "migrate"], environment: environment)
        #expect(migrated.status == 0, "\(migrated.stderr)")

        let config = home.root + "/cardvault.json"
        try Data(#"{"listen": "127.0.0.1:0"}"#.utf8).write(to: URL(fileURLWithPath: config))
        func start(_ name: String) throws -> (ChildProcess, Int) {
            var own = environment
            own["CARDVAULT_DATA_DIR"] = home.root + "/" + name
            let child = try ChildProcess(arguments: ["serve", "--config", config], environment: own)
            let serving = child.waitForLine(prefix: "cardvault serving on", timeout: 30) ?? ""
            let port = serving.split(separator: " ").last.flatMap { $0.split(separator: ":").last }.flatMap {
                Int($0)
            }
            guard let port else {
                child.kill()
                throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: child.output])
            }
            return (child, port)
        }
        let (a, portA) = try start("a")
        defer { a.terminate() }
        let created = a.completeLines().first { $0.hasPrefix("development client created") } ?? ""
        var clientId = ""
        var apiKey = ""
        for word in created.split(separator: " ") {
            if word.hasPrefix("ClientId=") { clientId = String(word.dropFirst(9)) }
            if word.hasPrefix("ApiKey=") { apiKey = String(word.dropFirst(7)) }
        }
        #expect(!clientId.isEmpty && !apiKey.isEmpty)
        let (b, portB) = try start("b")
        defer { b.terminate() }
        // The second daemon finds the client in the database and creates none.
        #expect(!b.output.contains("development client created"))

        let api = "/v2.01/\(clientId)/"
        func call(_ port: Int, _ method: String, _ path: String, _ body: String = "") async throws -> [String: Any] {
            let basic = Data("\(clientId):\(apiKey)".utf8).base64EncodedString()
            let login = try await blocking {
                try RawHTTPClient.request(
                    port: port, method: "POST", path: "/v2.01/oauth/token",
                    headers: [
                        "Authorization": "Basic " + basic, "Content-Type": "application/x-www-form-urlencoded",
                    ],
                    body: "grant_type=client_credentials")
            }
            let token = try #require(Self.json(login.body)["access_token"] as? String)
            let answer = try await blocking {
                try RawHTTPClient.request(
                    port: port, method: method, path: path,
                    headers: ["Authorization": "Bearer " + token, "Content-Type": "application/json"], body: body)
            }
            #expect(answer.status == 200, "\(method) \(path): \(answer.text.prefix(200))")
            return try Self.json(answer.body)
        }
        let user = try #require(
            try await call(
                portA, "POST", api + "users/natural",
                #"{"FirstName":"Pair","LastName":"Shopper","Email":"pair@example.com","Birthday":188352000,"#
                    + #""Nationality":"FR","CountryOfResidence":"FR","TermsAndConditionsAccepted":true,"#
                    + #""UserCategory":"PAYER"}"#)["Id"] as? String)
        let registration = try await call(
            portA, "POST", api + "cardregistrations",
            #"{"UserId":""# + user + #"","Currency":"EUR","CardType":"CB_VISA_MASTERCARD"}"#)
        let registrationId = try #require(registration["Id"] as? String)
        let tokenizationURL = try #require((registration["CardRegistrationURL"] as? String).flatMap(URLComponents.init))
        let form =
            "data=\(registration["PreregistrationData"] as? String ?? "")&accessKeyRef="
            + "\(registration["AccessKey"] as? String ?? "")&cardNumber=4970107111111119&cardExpirationDate=1229"
            + "&cardCvx=123"
        // The tokenization POST goes to B (the registration was created through A).
        let tokenized = try await blocking {
            try RawHTTPClient.request(
                port: portB, method: "POST", path: tokenizationURL.path,
                headers: ["Content-Type": "application/x-www-form-urlencoded"], body: form)
        }
        #expect(tokenized.status == 200)
        #expect(tokenized.text.hasPrefix("data="))
        let updated = try await call(
            portA, "PUT", api + "cardregistrations/" + registrationId,
            #"{"RegistrationData":""# + tokenized.text + #""}"#)
        let cardId = try #require(updated["CardId"] as? String)
        let card = try await call(portB, "GET", api + "cards/" + cardId)
        #expect(card["Id"] as? String == cardId)
        #expect(card["UserId"] as? String == user)
        #expect(card["Alias"] as? String == "497010XXXXXX1119")
    }

    static func json(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }
}

/// initdb in a temporary directory and a server on a Unix socket there (as `postgres` when run as root).
final class ThrowawayCluster {
    let directory: String
    let url: String

    init() throws {
        var template = Array("/tmp/cv-pair-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
        directory = String(cString: made)
        if getuid() == 0 { try Self.run("/bin/chown", ["postgres:postgres", directory]) }
        let port = Int.random(in: 20_000...60_000)
        try Self.asServer(
            PostgresPairLiveTests.binaries + "/initdb",
            ["-D", directory + "/data", "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"])
        let settings = "-c listen_addresses='' -c unix_socket_directories='\(directory)' -c port=\(port)"
        try Self.asServer(
            PostgresPairLiveTests.binaries + "/pg_ctl",
            ["-D", directory + "/data", "-l", directory + "/server.log", "-w", "-t", "60", "-o", settings, "start"])
        url = "postgresql:///postgres?host=\(directory)&port=\(port)&user=postgres"
    }

    func stop() {
        try? Self.asServer(
            PostgresPairLiveTests.binaries + "/pg_ctl", ["-D", directory + "/data", "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    static func asServer(_ program: String, _ arguments: [String]) throws {
        if getuid() == 0 {
            try run("/usr/sbin/runuser", ["-u", "postgres", "--", program] + arguments)
        } else {
            try run(program, arguments)
        }
    }

    /// Runs `program` through the shell with its output to /dev/null (pg_ctl's server would hold a pipe open;
    /// system() reaps the child with waitpid, where Foundation's Process can miss the exit); throws unless it exits 0.
    static func run(_ program: String, _ arguments: [String]) throws {
        let quoted = ([program] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        guard system(quoted.joined(separator: " ") + " >/dev/null 2>&1 </dev/null") == 0 else {
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "\(program) failed"])
        }
    }
}
