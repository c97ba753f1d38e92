import Testing

@testable import OutboundHTTP

@Suite struct OutboundHTTPClientTests {
    static let url = try! DestinationURL(parsing: "https://psp.example/v1/charge")

    @Test func refusesAddressesThePolicyRefusesEvenWhenHandedIn() async throws {
        let client = OutboundHTTPClient(configuration: OutboundHTTPConfiguration())
        for address in ["10.0.0.7", "127.0.0.1", "169.254.169.254", "::ffff:192.168.0.1"] {
            let pinned = try #require(IPAddress(address))
            do {
                _ = try await client.send(OutboundRequest(url: Self.url, addresses: [pinned], method: "POST"))
                Issue.record("sent to \(address)")
            } catch {
                #expect(error.code == .addressRefused, "\(address)")
            }
        }
    }

    @Test func checkedAddressesRefuseAHostWithAnyRefusedAddress() async throws {
        struct Resolver: HostResolving {
            func addresses(of host: String) async throws(OutboundHTTPError) -> [IPAddress] {
                [IPAddress("93.184.216.34")!, IPAddress("10.0.0.1")!]
            }
        }
        let client = OutboundHTTPClient(configuration: OutboundHTTPConfiguration(), resolver: Resolver())
        await #expect(throws: OutboundHTTPError.self) { try await client.checkedAddresses(for: Self.url) }
        let allowed = OutboundHTTPClient(
            configuration: OutboundHTTPConfiguration(
                addressPolicy: AddressPolicy(allowedSpecialNetworks: [IPNetwork("10.0.0.0/8")!])),
            resolver: Resolver())
        #expect(try await allowed.checkedAddresses(for: Self.url).count == 2)
    }

    @Test func aClientThatIsNotRunningRefusesAndUnknownMethodsAreRefused() async throws {
        let client = OutboundHTTPClient(configuration: OutboundHTTPConfiguration())
        let address = try #require(IPAddress("93.184.216.34"))
        do {
            _ = try await client.send(OutboundRequest(url: Self.url, addresses: [address], method: "POST"))
            Issue.record("sent")
        } catch {
            #expect(error.code == .notRunning)
        }
        do {
            _ = try await client.send(OutboundRequest(url: Self.url, addresses: [address], method: "TRACE"))
            Issue.record("sent")
        } catch {
            #expect(error.code == .invalidRequest)
        }
        #expect(!client.isRunning)
    }

    @Test func runStartsAndCancellationStopsTheLoop() async throws {
        let client = OutboundHTTPClient(configuration: OutboundHTTPConfiguration())
        let runner = Task { try await client.run() }
        for _ in 0..<200 where !client.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        #expect(client.isRunning)
        runner.cancel()
        try await runner.value
        #expect(!client.isRunning)
    }
}
