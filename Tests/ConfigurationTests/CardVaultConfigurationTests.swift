import Foundation
import HTTPServer
import Testing
import VaultCore

@testable import Configuration

@Suite struct CardVaultConfigurationTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func write(_ json: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "cardvault-config-\(UUID().uuidString).json")
        try Data(json.utf8).write(to: url)
        return url.path
    }

    @Test func defaultsNeedNoFile() throws {
        let configuration = try CardVaultConfiguration.load(file: nil, environment: [:])
        #expect(configuration == CardVaultConfiguration())
        #expect(configuration.listen == "127.0.0.1:8080")
        #expect(configuration.http.maxBodyBytes == 1_048_576)
        #expect(!configuration.tls.isEnabled)
    }

    @Test func theShippedFileLoads() throws {
        let file = Self.repository.appendingPathComponent("config/cardvault.json").path
        let configuration = try CardVaultConfiguration.load(file: file, environment: [:])
        #expect(configuration.listen == "127.0.0.1:8080")
        #expect(configuration.publicURL == "http://127.0.0.1:8080")
        #expect(configuration.dataDirectory == "data")
        #expect(configuration.keysDirectory == "keys")
        #expect(configuration.http.threads == 2)
        #expect(configuration.tls == CardVaultConfiguration.TLS())
    }

    @Test func fileValuesApply() throws {
        let file = try Self.write(
            """
            {"listen": "[::1]:9443", "publicURL": "https://pay.example.com/", "dataDir": "/var/lib/cv",
             "keysDir": "/etc/cv/keys", "logLevel": "warning",
             "http": {"maxBodyBytes": 2048, "maxHeaderBytes": 4096, "connectionTimeoutSeconds": 5, "threads": 4,
                      "shutdownGracePeriodSeconds": 3},
             "tls": {"certificateFile": "c.pem", "keyFile": "k.pem", "clientCAFile": null}}
            """
        )
        let configuration = try CardVaultConfiguration.load(file: file, environment: [:])
        #expect(configuration.listenHost == "::1" && configuration.listenPort == 9443)
        #expect(configuration.listen == "[::1]:9443")
        #expect(configuration.publicURL == "https://pay.example.com")
        #expect(configuration.dataDirectory == "/var/lib/cv" && configuration.keysDirectory == "/etc/cv/keys")
        #expect(configuration.logLevel == .warning)
        #expect(
            configuration.http
                == .init(
                    maxBodyBytes: 2048,
                    maxHeaderBytes: 4096,
                    connectionTimeoutSeconds: 5,
                    threads: 4,
                    shutdownGracePeriodSeconds: 3
                )
        )
        #expect(configuration.tls == .init(certificateFile: "c.pem", keyFile: "k.pem"))
    }

    @Test func everyFieldHasAnEnvironmentOverride() throws {
        let file = Self.repository.appendingPathComponent("config/cardvault.json").path
        let environment = [
            "CARDVAULT_LISTEN": "0.0.0.0:9000",
            "CARDVAULT_PUBLIC_URL": "https://vault.example.com",
            "CARDVAULT_DATA_DIR": "/data",
            "CARDVAULT_KEYS_DIR": "/keys",
            "CARDVAULT_LOG_LEVEL": "debug",
            "CARDVAULT_SANDBOX_FILE": "/etc/sandbox.json",
            "CARDVAULT_RISK_FILE": "/etc/risk.json",
            "CARDVAULT_CHECKOUT_ORIGINS": "https://shop.example, http://localhost:3000",
            "CARDVAULT_TOKENIZATIONS_PER_MINUTE_PER_ADDRESS": "5000",
            "CARDVAULT_HTTP_MAX_BODY_BYTES": "4096",
            "CARDVAULT_HTTP_MAX_HEADER_BYTES": "2048",
            "CARDVAULT_HTTP_CONNECTION_TIMEOUT_SECONDS": "7",
            "CARDVAULT_HTTP_THREADS": "3",
            "CARDVAULT_HTTP_SHUTDOWN_GRACE_PERIOD_SECONDS": "1",
            "CARDVAULT_TLS_CERTIFICATE_FILE": "/tls/cert.pem",
            "CARDVAULT_TLS_KEY_FILE": "/tls/key.pem",
            "CARDVAULT_TLS_CLIENT_CA_FILE": "/tls/ca.pem",
            "CARDVAULT_METRICS_TOKEN": "prometheus-scrape-token-1",
            "CARDVAULT_PAGE_VIEWS_PER_MINUTE_PER_ADDRESS": "11",
            "CARDVAULT_ACS_REQUESTS_PER_MINUTE_PER_ADDRESS": "12",
            "CARDVAULT_TOKEN_FAILURES_PER_MINUTE_PER_ADDRESS": "13",
            "CARDVAULT_RATE_LIMIT_TRACKED_ADDRESSES": "4096",
            "CARDVAULT_HTTP_MAX_CONNECTIONS": "200",
            "CARDVAULT_HTTP_MAX_CONNECTIONS_PER_ADDRESS": "20",
            "CARDVAULT_HTTP_REQUEST_DEADLINE_SECONDS": "15",
            "CARDVAULT_KEYS_ROTATE_AFTER_SEALS": "1000000",
            "CARDVAULT_KEYS_ROTATE_AFTER_DAYS": "30",
            "CARDVAULT_DATABASE_URL": "postgresql://cardvault@db1,db2/cardvault?target_session_attrs=read-write",
            "CARDVAULT_DATABASE_POOL_SIZE": "12",
            "CARDVAULT_DATABASE_SYNCHRONOUS_COMMIT": "remote_apply",
            "CARDVAULT_LIFETIMES_SWEEP_INTERVAL_SECONDS": "5",
            "CARDVAULT_LIFETIMES_ACCESS_KEY_SECONDS": "600",
            "CARDVAULT_LIFETIMES_CHECKOUT_SESSION_SECONDS": "900",
            "CARDVAULT_FORWARD_DESTINATIONS": "https://psp.example/v1/",
            "CARDVAULT_FORWARD_CA_FILE": "/tls/psp-ca.pem",
            "CARDVAULT_FORWARD_PRIVATE_NETWORKS": "10.1.0.0/16",
            "CARDVAULT_FORWARD_CONNECT_TIMEOUT_SECONDS": "2",
            "CARDVAULT_FORWARD_TIMEOUT_SECONDS": "9",
            "CARDVAULT_FORWARD_MAX_REQUEST_BODY_BYTES": "100",
            "CARDVAULT_FORWARD_MAX_RESPONSE_BODY_BYTES": "200",
            "CARDVAULT_FORWARD_MAX_CONCURRENT": "3",
            "CARDVAULT_HOOKS_RETRY_INTERVAL_SECONDS": "1",
            "CARDVAULT_HOOKS_ALLOW_PRIVATE_ADDRESSES": "true",
            "CARDVAULT_HOOKS_MAX_CONCURRENT_PER_DESTINATION": "2",
            "CARDVAULT_HOOKS_POLL_INTERVAL_MILLISECONDS": "100",
            "CARDVAULT_KEK_PROVIDER": "pkcs11",
            "CARDVAULT_KEK_MODULE": "/usr/lib/softhsm/libsofthsm2.so",
            "CARDVAULT_KEK_TOKEN_LABEL": "vault token",
            "CARDVAULT_KEK_KEY_LABEL": "master-2026",
            "CARDVAULT_KEK_PIN_FILE": "/run/secrets/hsm.pin",
            "CARDVAULT_KEK_PIN_ENVIRONMENT": "HSM_PIN",
        ]
        #expect(Set(environment.keys) == Set(ConfigurationField.all.map(\.environmentName)))
        let configuration = try CardVaultConfiguration.load(file: file, environment: environment)
        var expected = CardVaultConfiguration(
            listenHost: "0.0.0.0",
            listenPort: 9000,
            publicURL: "https://vault.example.com",
            dataDirectory: "/data",
            keysDirectory: "/keys",
            logLevel: .debug,
            sandboxFile: "/etc/sandbox.json",
            riskFile: "/etc/risk.json",
            checkoutOrigins: ["https://shop.example", "http://localhost:3000"],
            tokenizationsPerMinutePerAddress: 5000,
            pageViewsPerMinutePerAddress: 11,
            acsRequestsPerMinutePerAddress: 12,
            tokenFailuresPerMinutePerAddress: 13,
            rateLimitTrackedAddresses: 4096,
            http: .init(
                maxBodyBytes: 4096,
                maxHeaderBytes: 2048,
                connectionTimeoutSeconds: 7,
                threads: 3,
                shutdownGracePeriodSeconds: 1,
                maxConnections: 200,
                maxConnectionsPerAddress: 20,
                requestDeadlineSeconds: 15
            ),
            tls: .init(certificateFile: "/tls/cert.pem", keyFile: "/tls/key.pem", clientCAFile: "/tls/ca.pem"),
            metricsToken: Redacted("prometheus-scrape-token-1"),
            keys: .init(rotateAfterSeals: 1_000_000, rotateAfterDays: 30),
            databaseURL: Redacted("postgresql://cardvault@db1,db2/cardvault?target_session_attrs=read-write"),
            database: .init(poolSize: 12, synchronousCommit: "remote_apply"),
            lifetimes: .init(sweepIntervalSeconds: 5, accessKeySeconds: 600, checkoutSessionSeconds: 900),
            forward: .init(
                destinations: ["https://psp.example/v1/"], caFile: "/tls/psp-ca.pem", privateNetworks: ["10.1.0.0/16"],
                connectTimeoutSeconds: 2, timeoutSeconds: 9, maxRequestBodyBytes: 100, maxResponseBodyBytes: 200,
                maxConcurrent: 3),
            hooks: .init(
                retryIntervalSeconds: 1, allowPrivateAddresses: true, maxConcurrentPerDestination: 2,
                pollIntervalMilliseconds: 100)
        )
        expected.kek = .init(
            provider: "pkcs11", module: "/usr/lib/softhsm/libsofthsm2.so", tokenLabel: "vault token",
            keyLabel: "master-2026", pinFile: "/run/secrets/hsm.pin", pinEnvironment: "HSM_PIN")
        #expect(configuration == expected)
    }

    @Test func keyCustodySettingsRefuseUnknownProvidersAndControlCharacters() throws {
        let file = Self.repository.appendingPathComponent("config/cardvault.json").path
        #expect(try CardVaultConfiguration.load(file: file, environment: [:]).kek.provider == "file")
        for (name, value) in [
            ("CARDVAULT_KEK_PROVIDER", "vault"), ("CARDVAULT_KEK_KEY_LABEL", ""),
            ("CARDVAULT_KEK_TOKEN_LABEL", "a\u{7}b"),
            ("CARDVAULT_KEK_PIN_ENVIRONMENT", String(repeating: "P", count: 257)),
        ] {
            #expect(throws: ConfigurationError.self) {
                try CardVaultConfiguration.load(file: file, environment: [name: value])
            }
        }
    }

    @Test func anEmptyEnvironmentValueTurnsATLSFileOff() throws {
        let file = try Self.write(#"{"tls": {"certificateFile": "c.pem", "keyFile": "k.pem"}}"#)
        let configuration = try CardVaultConfiguration.load(
            file: file,
            environment: ["CARDVAULT_TLS_CERTIFICATE_FILE": "", "CARDVAULT_TLS_KEY_FILE": ""]
        )
        #expect(!configuration.tls.isEnabled)
    }

    @Test(arguments: [
        (#"{"listen": "nope"}"#, "listen"),
        (#"{"listen": "127.0.0.1:70000"}"#, "listen"),
        (#"{"publicURL": "ftp://x"}"#, "publicURL"),
        (#"{"publicURL": "/relative"}"#, "publicURL"),
        (#"{"dataDir": ""}"#, "dataDir"),
        (#"{"keysDir": 7}"#, "keysDir"),
        (#"{"logLevel": "loud"}"#, "logLevel"),
        (#"{"tokenizationsPerMinutePerAddress": 0}"#, "tokenizationsPerMinutePerAddress"),
        (#"{"pageViewsPerMinutePerAddress": 0}"#, "pageViewsPerMinutePerAddress"),
        (#"{"acsRequestsPerMinutePerAddress": -1}"#, "acsRequestsPerMinutePerAddress"),
        (#"{"tokenFailuresPerMinutePerAddress": "5"}"#, "tokenFailuresPerMinutePerAddress"),
        (#"{"rateLimitTrackedAddresses": 10}"#, "rateLimitTrackedAddresses"),
        (#"{"http": {"maxConnections": 1}}"#, "http.maxConnections"),
        (#"{"hooks": {"allowPrivateAddresses": "yes"}}"#, "hooks.allowPrivateAddresses"),
        (#"{"hooks": {"allowPrivateAddresses": 1}}"#, "hooks.allowPrivateAddresses"),
        (#"{"hooks": {"retryIntervalSeconds": 0}}"#, "hooks.retryIntervalSeconds"),
        (#"{"http": {"maxConnectionsPerAddress": 0}}"#, "http.maxConnectionsPerAddress"),
        (#"{"http": {"maxConnectionsPerAddress": 513}}"#, "http.maxConnectionsPerAddress"),
        (#"{"http": {"maxConnections": 100, "maxConnectionsPerAddress": 64}}"#, "http.maxConnectionsPerAddress"),
        (#"{"http": {"requestDeadlineSeconds": 0}}"#, "http.requestDeadlineSeconds"),
        (#"{"http": {"maxBodyBytes": 0}}"#, "http.maxBodyBytes"),
        (#"{"http": {"maxHeaderBytes": 100}}"#, "http.maxHeaderBytes"),
        (#"{"http": {"connectionTimeoutSeconds": "30"}}"#, "http.connectionTimeoutSeconds"),
        (#"{"http": {"threads": true}}"#, "http.threads"),
        (#"{"http": {"threads": 1.5}}"#, "http.threads"),
        (#"{"http": {"thread": 2}}"#, "http.thread"),
        (#"{"colour": "blue"}"#, "colour"),
        (#"{"tls": {"keyFile": "k.pem"}}"#, "tls.certificateFile"),
        (#"{"tls": {"certificateFile": "c.pem"}}"#, "tls.keyFile"),
        (#"{"tls": {"clientCAFile": "ca.pem"}}"#, "tls.clientCAFile"),
        (#"{"keys": {"rotateAfterSeals": 0}}"#, "keys.rotateAfterSeals"),
        (#"{"keys": {"rotateAfterSeals": 4294967297}}"#, "keys.rotateAfterSeals"),
        (#"{"keys": {"rotateAfterDays": -1}}"#, "keys.rotateAfterDays"),
        (#"{"keys": {"rotateAfter": 5}}"#, "keys.rotateAfter"),
    ])
    func invalidValuesNameTheirField(json: String, field: String) throws {
        let file = try Self.write(json)
        do {
            _ = try CardVaultConfiguration.load(file: file, environment: [:])
            Issue.record("accepted \(json)")
        } catch {
            #expect(error.field == field)
            #expect(error.message.hasPrefix(field + ":") || error.message.contains(field))
        }
    }

    @Test func environmentErrorsNameTheVariable() {
        #expect(throws: ConfigurationError.self) {
            try CardVaultConfiguration.load(file: nil, environment: ["CARDVAULT_HTTP_THREADS": "many"])
        }
        do {
            _ = try CardVaultConfiguration.load(file: nil, environment: ["CARDVAULT_LISTEN": "8080"])
        } catch {
            #expect(error.field == "listen")
            #expect(error.message.hasPrefix("CARDVAULT_LISTEN"))
        }
    }

    @Test func unreadableOrMalformedFilesAreRefused() throws {
        #expect(throws: ConfigurationError(.unreadableFile, field: "", message: "")) {
            try CardVaultConfiguration.load(file: "/nonexistent/cardvault.json", environment: [:])
        }
        #expect(throws: ConfigurationError(.malformedFile, field: "", message: "")) {
            try CardVaultConfiguration.load(file: try Self.write("{not json"), environment: [:])
        }
        #expect(throws: ConfigurationError(.malformedFile, field: "", message: "")) {
            try CardVaultConfiguration.load(file: try Self.write("[1]"), environment: [:])
        }
    }

    @Test func missingTLSFilesAreNamedWhenTheServerIsConfigured() {
        let configuration = CardVaultConfiguration(tls: .init(certificateFile: "/nonexistent.pem", keyFile: "/k.pem"))
        do {
            _ = try configuration.serverConfiguration()
            Issue.record("accepted a missing certificate")
        } catch {
            #expect(error.field == "tls.certificateFile")
        }
    }

    @Test func serverSettingsFollowTheConfiguration() throws {
        let configuration = CardVaultConfiguration(
            listenHost: "127.0.0.1",
            listenPort: 0,
            http: .init(
                maxBodyBytes: 10, maxHeaderBytes: 2048, connectionTimeoutSeconds: 9, threads: 3, maxConnections: 300,
                maxConnectionsPerAddress: 30, requestDeadlineSeconds: 8)
        )
        let server = try configuration.serverConfiguration()
        #expect(server.maxConnections == 300 && server.maxConnectionsPerAddress == 30)
        #expect(server.requestDeadlineSeconds == 8)
        #expect(server.host == "127.0.0.1" && server.port == 0)
        #expect(server.maxBodyBytes == 10 && server.maxHeaderBytes == 2048)
        #expect(server.connectionTimeoutSeconds == 9 && server.threads == 3)
        #expect(server.tls == nil)
    }

    @Test func readmeDocumentsEveryField() throws {
        let readme = try String(contentsOf: Self.repository.appendingPathComponent("README.md"), encoding: .utf8)
        guard let start = readme.range(of: "## Configuration") else {
            Issue.record("README.md has no Configuration section")
            return
        }
        let section = readme[start.upperBound...].prefix { _ in true }
        let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
        let text = section[..<end]
        for field in ConfigurationField.all {
            #expect(text.contains("`\(field.path)`"), "README does not document \(field.path)")
            #expect(text.contains("`\(field.environmentName)`"), "README does not name \(field.environmentName)")
        }
    }

    static let metricsToken = "metrics-0123456789abcdef"

    @Test func theMetricsTokenIsReadFromFileAndEnvironmentAndNeverPrinted() throws {
        let fromEnvironment = try CardVaultConfiguration.load(
            file: nil, environment: ["CARDVAULT_METRICS_TOKEN": Self.metricsToken])
        #expect(fromEnvironment.metricsToken?.unsafeRevealed == Self.metricsToken)
        #expect(!"\(fromEnvironment)".contains(Self.metricsToken))
        let file = try Self.write(#"{"metricsToken": "\#(Self.metricsToken)"}"#)
        #expect(
            try CardVaultConfiguration.load(file: file, environment: [:]).metricsToken?.unsafeRevealed
                == Self.metricsToken)
        let none = try Self.write(#"{"metricsToken": null}"#)
        #expect(try CardVaultConfiguration.load(file: none, environment: [:]).metricsToken == nil)
        #expect(
            try CardVaultConfiguration.load(file: nil, environment: ["CARDVAULT_METRICS_TOKEN": ""]).metricsToken == nil
        )
        for bad in ["short-secret", "has a space in the token", String(repeating: "x", count: 257)] {
            do {
                _ = try CardVaultConfiguration.load(file: nil, environment: ["CARDVAULT_METRICS_TOKEN": bad])
                Issue.record("accepted \(bad.count) characters")
            } catch {
                #expect(error.field == "metricsToken")
                #expect(!error.message.contains(bad))
            }
        }
    }
}

@Suite struct HookConfigurationTests {
    @Test func theHooksSectionReadsABooleanAndIntegersFromTheFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hooks-\(UInt64.random(in: 0...UInt64.max)).json")
        try Data(#"{"hooks": {"allowPrivateAddresses": true, "retryIntervalSeconds": 30}}"#.utf8).write(to: file)
        let configuration = try CardVaultConfiguration.load(file: file.path, environment: [:])
        #expect(configuration.hooks == .init(retryIntervalSeconds: 30, allowPrivateAddresses: true))
        let overridden = try CardVaultConfiguration.load(
            file: file.path, environment: ["CARDVAULT_HOOKS_ALLOW_PRIVATE_ADDRESSES": "false"])
        #expect(!overridden.hooks.allowPrivateAddresses)
        #expect(CardVaultConfiguration().hooks == .init(retryIntervalSeconds: 600, allowPrivateAddresses: false))
    }
}
