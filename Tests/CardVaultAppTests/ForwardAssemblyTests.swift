import CardVaultApp
import Configuration
import Forward
import OutboundHTTP
import Testing

@Suite struct ForwardAssemblyTests {
    @Test func settingsFollowTheConfiguration() throws {
        let forward = CardVaultConfiguration.Forward(
            destinations: ["https://psp.example/v1/", "https://localhost:8443/psp"], privateNetworks: ["127.0.0.1/32"],
            connectTimeoutSeconds: 2, timeoutSeconds: 9, maxRequestBodyBytes: 1000, maxResponseBodyBytes: 2000,
            maxConcurrent: 3)
        let settings = try ForwardAssembly.settings(forward)
        #expect(settings.destinations.map(\.description) == ["https://psp.example/v1/", "https://localhost:8443/psp"])
        #expect(settings.client.timeoutMilliseconds == 9000 && settings.client.connectTimeoutMilliseconds == 2000)
        #expect(settings.client.maxResponseBytes == 2000 && settings.client.maxConcurrentTransfers == 3)
        #expect(settings.maxRequestBodyBytes == 1000)
        #expect(settings.client.addressPolicy.allows(try #require(IPAddress("127.0.0.1"))))
        #expect(!settings.client.addressPolicy.allows(try #require(IPAddress("10.0.0.1"))))
    }

    @Test func anUnreadableCAFileIsRefusedNamingIt() throws {
        do {
            _ = try ForwardAssembly.settings(CardVaultConfiguration.Forward(caFile: "/nonexistent/ca.pem"))
            Issue.record("accepted")
        } catch {
            #expect(error.field == "forward.caFile")
        }
    }
}
