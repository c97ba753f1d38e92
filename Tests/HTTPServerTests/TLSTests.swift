import CardVaultTesting
import Foundation
import Testing
import VaultCore

@testable import HTTPServer

/// Certificates made by the `openssl` CLI in a temporary directory, for this test run only.
struct TestCertificates: Sendable {
    let directory: URL

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func make() throws -> TestCertificates {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "cardvault-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let certificates = TestCertificates(directory: directory)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"]
        // The server's self-signed certificate.
        try certificates.openssl(
            ["req", "-x509"] + ec + [
                "-keyout", "server.key", "-out", "server.pem", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1",
            ]
        )
        // A CA for merchant backends, a client certificate it signed, and one it did not.
        try certificates.openssl(
            ["req", "-x509"] + ec + ["-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=Test CA"])
        try certificates.openssl(
            ["req"] + ec.dropLast(2) + ["-keyout", "client.key", "-out", "client.csr", "-subj", "/CN=merchant"])
        try certificates.openssl(
            [
                "x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days",
                "1",
                "-out", "client.pem",
            ]
        )
        try certificates.openssl(
            ["req", "-x509"] + ec + ["-keyout", "rogue.key", "-out", "rogue.pem", "-subj", "/CN=rogue"])
        return certificates
    }

    func text(_ name: String) throws -> String {
        try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    @discardableResult
    func openssl(_ arguments: [String], input: String = "") throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        if arguments.first != "s_client" && process.terminationStatus != 0 {
            throw Failure(description: "openssl \(arguments.joined(separator: " ")) failed")
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// GETs `/health` over TLS with `openssl s_client`, verifying the server against its own
    /// certificate, optionally presenting a client certificate; returns the raw HTTP answer.
    func httpsGET(port: Int, clientCertificate: String? = nil) async throws -> String {
        var arguments = [
            "s_client", "-connect", "127.0.0.1:\(port)", "-CAfile", path("server.pem"), "-verify_return_error",
            "-quiet",
        ]
        if let clientCertificate {
            arguments += ["-cert", path(clientCertificate + ".pem"), "-key", path(clientCertificate + ".key")]
        }
        let request = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        let certificates = self
        let command = arguments
        return try await blocking { try certificates.openssl(command, input: request) }
    }
}

@Suite(.serialized) struct TLSTests {
    @Test func servesHTTPSWithTheConfiguredCertificate() async throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let tls = TLSConfiguration(
            certificatePEM: try certificates.text("server.pem"),
            privateKeyPEM: Redacted(try certificates.text("server.key"))
        )
        try await withLiveServer(ServerConfiguration(port: 0, tls: tls)) { port in
            let answer = try await certificates.httpsGET(port: port)
            #expect(answer.hasPrefix("HTTP/1.1 200"))
            #expect(answer.contains(#"{"status":"ok"}"#))
            #expect(answer.contains("X-Request-Id:"))
            #expect(answer.contains("Strict-Transport-Security: max-age=31536000\r\n"))
            // Plain HTTP to the TLS port gets no HTTP answer.
            let plain = try await blocking { () -> Int? in
                let client = try RawHTTPClient(port: port, timeoutSeconds: 2)
                client.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                return try? client.readResponse().status
            }
            #expect(plain != 200)
        }
    }

    @Test func mutualTLSAcceptsOnlyClientsSignedByTheConfiguredCA() async throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let tls = TLSConfiguration(
            certificatePEM: try certificates.text("server.pem"),
            privateKeyPEM: Redacted(try certificates.text("server.key")),
            clientCAPEM: try certificates.text("ca.pem")
        )
        try await withLiveServer(ServerConfiguration(port: 0, tls: tls)) { port in
            let trusted = try await certificates.httpsGET(port: port, clientCertificate: "client")
            #expect(trusted.hasPrefix("HTTP/1.1 200"))
            let anonymous = try await certificates.httpsGET(port: port)
            #expect(anonymous.hasPrefix("HTTP/1.1 403"))
            #expect(anonymous.contains("client certificate"))
            let rogue = try await certificates.httpsGET(port: port, clientCertificate: "rogue")
            #expect(!rogue.hasPrefix("HTTP/1.1 200"))
        }
    }
}
