import CardVaultTesting
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite(.serialized) struct ServeCommandTests {
    static func temporaryFile(_ text: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "cardvault-serve-\(UUID().uuidString).json")
        try Data(text.utf8).write(to: url)
        return url.path
    }

    @Test func helpDescribesTheCommand() throws {
        let result = try CLIProcess.run(["serve", "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("usage: cardvault serve [--config FILE]"))
        #expect(result.stdout.contains("CARDVAULT_LISTEN"))
        let top = try CLIProcess.run(["--help"])
        #expect(top.stdout.contains("serve"))
    }

    @Test(arguments: [["serve", "--bogus"], ["serve", "--config"], ["serve", "extra"]])
    func badUsageExits64(arguments: [String]) throws {
        let result = try CLIProcess.run(arguments)
        #expect(result.status == 64)
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test func anInvalidConfigFileStopsStartUpNamingTheField() throws {
        let file = try Self.temporaryFile(#"{"listen": "127.0.0.1:0", "http": {"threads": 0}}"#)
        let result = try CLIProcess.run(["serve", "--config", file])
        #expect(result.status == 78)
        #expect(result.stderr.contains("http.threads"))
        #expect(result.stdout.isEmpty)
    }

    @Test func anInvalidEnvironmentOverrideNamesTheVariable() throws {
        var environment = ProcessInfo.processInfo.environment
        environment["CARDVAULT_PUBLIC_URL"] = "not a url"
        let result = try CLIProcess.run(["serve", "--config", "/dev/null/none.json"], environment: environment)
        #expect(result.status != 0)
        let good = try Self.temporaryFile(#"{"listen": "127.0.0.1:0"}"#)
        let named = try CLIProcess.run(["serve", "--config", good], environment: environment)
        #expect(named.status == 78)
        #expect(named.stderr.contains("CARDVAULT_PUBLIC_URL"))
    }

    @Test(arguments: [SIGTERM, SIGINT])
    func servesHealthAndExitsCleanlyOnASignal(signal: Int32) throws {
        let process = Process()
        process.executableURL = CLIProcess.binary
        let file = try Self.temporaryFile(#"{"listen": "127.0.0.1:9"}"#)
        process.arguments = ["serve", "--config", file]
        var environment = ProcessInfo.processInfo.environment
        environment["CARDVAULT_LISTEN"] = "127.0.0.1:0"  // the environment wins over the file
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("cardvault-serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        environment["CARDVAULT_DATA_DIR"] = home.appendingPathComponent("data").path
        environment["CARDVAULT_KEYS_DIR"] = home.appendingPathComponent("keys").path
        process.environment = environment
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        // A fresh deployment announces its development key and client, then where it listens.
        var text = ""
        while !text.contains("cardvault serving on") || !text.hasSuffix("\n") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("created development master key ") == true)
        #expect(lines.contains { $0.hasPrefix("development client created (shown once): ClientId=dev ApiKey=") })
        let announced = lines.first { $0.hasPrefix("cardvault serving on") } ?? ""
        #expect(announced.hasPrefix("cardvault serving on http://127.0.0.1:"))
        let port = Int(announced.split(separator: ":").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
        #expect(port > 0 && port != 9)

        let (status, body) = try Self.get(port: port, path: "/health")
        #expect(status == 200)
        #expect(body == #"{"status":"ok","keyCustody":"file"}"#)

        kill(process.processIdentifier, signal)
        let deadline = Date().addingTimeInterval(15)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            Issue.record("serve did not exit within 15 s of signal \(signal)")
            return
        }
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)
        let log = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains(#""msg":"listening""#))
        #expect(log.contains(#""route":"/health""#))
        #expect(log.contains(#""msg":"stopped""#))
        // Every service has returned before the store closes: the HTTP server drained, the admin socket and
        // the record sweeper (its lifetimes round and its 5 s expiry round) stopped.
        let logLines = log.split(separator: "\n").map(String.init)
        let closed = logLines.firstIndex { $0.contains(#""msg":"store closed""#) }
        #expect(closed != nil)
        for service in ["http", "admin-socket", "record-sweeper", "expiry-rounds"] {
            let stopped = logLines.firstIndex {
                $0.contains(#""msg":"service stopped""#) && $0.contains(#""service":"\#(service)""#)
            }
            #expect(stopped != nil && closed != nil && stopped! < closed!, "\(service)")
        }
    }

    /// A minimal HTTP/1.1 GET over a socket; returns status and body.
    static func get(port: Int, path: String) throws -> (Int, String) {
        try request(port: port, method: "GET", path: path)
    }

    /// One HTTP/1.1 request (`Connection: close`) with the shared raw client; status and body, or (0, "") when
    /// nothing answers.
    static func request(
        port: Int, method: String, path: String, headers: [String: String] = [:], body: String = ""
    )
        throws -> (Int, String)
    {
        guard
            let response = try? RawHTTPClient.request(
                port: port, method: method, path: path, headers: headers, body: body)
        else { return (0, "") }
        return (response.status, response.text)
    }
}
