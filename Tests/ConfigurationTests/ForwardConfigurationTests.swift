import Foundation
import Testing

@testable import Configuration

@Suite struct ForwardConfigurationTests {
    @Test func forwardingIsOffByDefault() throws {
        let configuration = try CardVaultConfiguration.load(file: nil, environment: [:])
        #expect(configuration.forward == CardVaultConfiguration.Forward())
        #expect(configuration.forward.destinations.isEmpty && configuration.forward.privateNetworks.isEmpty)
    }

    @Test func fileValuesApply() throws {
        let file = try CardVaultConfigurationTests.write(
            """
            {"forward": {"destinations": ["https://psp.example/v1/", "https://localhost:8443/psp"],
                         "caFile": null, "privateNetworks": ["127.0.0.1/32", "fd00::/8"],
                         "connectTimeoutSeconds": 2, "timeoutSeconds": 9, "maxRequestBodyBytes": 1000,
                         "maxResponseBodyBytes": 2000, "maxConcurrent": 3}}
            """)
        let forward = try CardVaultConfiguration.load(file: file, environment: [:]).forward
        #expect(
            forward
                == .init(
                    destinations: ["https://psp.example/v1/", "https://localhost:8443/psp"],
                    privateNetworks: ["127.0.0.1/32", "fd00::/8"], connectTimeoutSeconds: 2, timeoutSeconds: 9,
                    maxRequestBodyBytes: 1000, maxResponseBodyBytes: 2000, maxConcurrent: 3))
    }

    @Test func environmentOverrides() throws {
        let forward = try CardVaultConfiguration.load(
            file: nil,
            environment: [
                "CARDVAULT_FORWARD_DESTINATIONS": "https://a.example/x/, https://b.example",
                "CARDVAULT_FORWARD_PRIVATE_NETWORKS": "10.1.0.0/16",
                "CARDVAULT_FORWARD_TIMEOUT_SECONDS": "4", "CARDVAULT_FORWARD_CONNECT_TIMEOUT_SECONDS": "1",
                "CARDVAULT_FORWARD_MAX_REQUEST_BODY_BYTES": "10", "CARDVAULT_FORWARD_MAX_RESPONSE_BODY_BYTES": "20",
                "CARDVAULT_FORWARD_MAX_CONCURRENT": "5", "CARDVAULT_FORWARD_CA_FILE": "/etc/psp-ca.pem",
            ]
        ).forward
        #expect(forward.destinations == ["https://a.example/x/", "https://b.example"])
        #expect(forward.privateNetworks == ["10.1.0.0/16"])
        #expect(forward.timeoutSeconds == 4 && forward.connectTimeoutSeconds == 1 && forward.maxConcurrent == 5)
        #expect(forward.maxRequestBodyBytes == 10 && forward.maxResponseBodyBytes == 20)
        #expect(forward.caFile == "/etc/psp-ca.pem")
    }

    @Test(arguments: [
        ("CARDVAULT_FORWARD_DESTINATIONS", "http://psp.example/", "forward.destinations"),
        ("CARDVAULT_FORWARD_DESTINATIONS", "https://psp.example/?q=1", "forward.destinations"),
        ("CARDVAULT_FORWARD_DESTINATIONS", "https://user@psp.example/", "forward.destinations"),
        ("CARDVAULT_FORWARD_PRIVATE_NETWORKS", "10.0.0.0/40", "forward.privateNetworks"),
        ("CARDVAULT_FORWARD_PRIVATE_NETWORKS", "intranet", "forward.privateNetworks"),
        ("CARDVAULT_FORWARD_TIMEOUT_SECONDS", "0", "forward.timeoutSeconds"),
        ("CARDVAULT_FORWARD_MAX_CONCURRENT", "many", "forward.maxConcurrent"),
    ])
    func badValuesNameTheField(_ variable: String, _ value: String, _ field: String) {
        do {
            _ = try CardVaultConfiguration.load(file: nil, environment: [variable: value])
            Issue.record("\(variable)=\(value) was accepted")
        } catch {
            #expect(error.field == field)
            #expect(error.message.contains(variable))
        }
    }

    @Test func aFileValueOfTheWrongTypeIsRefused() throws {
        let file = try CardVaultConfigurationTests.write(#"{"forward": {"destinations": "https://psp.example/"}}"#)
        #expect(throws: ConfigurationError.self) { try CardVaultConfiguration.load(file: file, environment: [:]) }
    }
}
