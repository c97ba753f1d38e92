import Testing

@testable import OutboundHTTP

@Suite struct DestinationURLTests {
    @Test func parsesHostPortPathAndQuery() throws {
        let url = try DestinationURL(parsing: "HTTPS://PSP.Example:8443/v1/charges?mode=test")
        #expect(url.host == "psp.example")
        #expect(url.port == 8443)
        #expect(url.path == "/v1/charges")
        #expect(url.query == "mode=test")
        #expect(url.description == "https://psp.example:8443/v1/charges?mode=test")
        #expect(try DestinationURL(parsing: "https://[::1]:9443").bareHost == "::1")
        #expect(try DestinationURL(parsing: "https://psp.example").port == 443)
    }

    @Test(arguments: [
        "http://psp.example/", "ftp://psp.example/", "https://user:pw@psp.example/",
        "https://psp.example@evil.example/",
        "https://psp.example/a/../admin", "https://psp.example/a/%2e%2e/admin", "https://psp.example/a%2fb",
        "https://psp.example/./x", "https://psp.example/x#frag", "https://psp.example/\\x", "https://psp .example/",
        "https://psp.example:0/", "https://psp.example:99999/", "https://0x7f.1/", "https://2130706433/",
        "https://127.1/", "https:/psp.example/", "//psp.example/", "", "https://psp.example/{{card.c.number}}",
        "https://[::g]/", "https://-psp.example/",
    ])
    func refusesWhatCouldMislead(_ text: String) {
        #expect(throws: DestinationURL.Problem.self) { try DestinationURL(parsing: text) }
    }

    @Test func prefixesMatchOnSegmentBoundaries() throws {
        let prefix = try DestinationPrefix(parsing: "https://localhost:8443/psp")
        #expect(prefix.allows(try DestinationURL(parsing: "https://localhost:8443/psp")))
        #expect(prefix.allows(try DestinationURL(parsing: "https://LOCALHOST:8443/psp/charge?x=1")))
        #expect(!prefix.allows(try DestinationURL(parsing: "https://localhost:8443/pspx")))
        #expect(!prefix.allows(try DestinationURL(parsing: "https://localhost:8444/psp/charge")))
        #expect(!prefix.allows(try DestinationURL(parsing: "https://localhost.evil.example:8443/psp/charge")))
        #expect(!prefix.allows(try DestinationURL(parsing: "https://localhost:8443/")))
        let slash = try DestinationPrefix(parsing: "https://psp.example/v1/")
        #expect(slash.allows(try DestinationURL(parsing: "https://psp.example/v1/x")))
        #expect(!slash.allows(try DestinationURL(parsing: "https://psp.example/v1")))
        #expect(
            try DestinationPrefix(parsing: "https://psp.example").allows(
                try DestinationURL(parsing: "https://psp.example/a")))
        #expect(throws: DestinationURL.Problem.self) { try DestinationPrefix(parsing: "https://psp.example/?q=1") }
    }
}

@Suite struct AddressPolicyTests {
    @Test(arguments: [
        "10.0.0.1", "127.0.0.1", "169.254.169.254", "172.16.5.4", "192.168.1.1", "100.64.0.1", "0.0.0.0", "224.0.0.1",
        "255.255.255.255", "::1", "::", "fe80::1", "fd00::1", "::ffff:10.0.0.1", "::ffff:127.0.0.1", "64:ff9b::a00:1",
        "2002:a00:1::", "2001:db8::1", "ff02::1",
    ])
    func refusesSpecialRangesByDefault(_ text: String) throws {
        let address = try #require(IPAddress(text))
        #expect(!AddressPolicy().allows(address))
    }

    @Test(arguments: ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8"])
    func allowsPublicAddresses(_ text: String) throws {
        #expect(AddressPolicy().allows(try #require(IPAddress(text))))
    }

    @Test func allowsOnlyTheListedSpecialRanges() throws {
        let policy = AddressPolicy(allowedSpecialNetworks: [
            try #require(IPNetwork("127.0.0.1/32")), try #require(IPNetwork("fd00::/8")),
        ])
        #expect(policy.allows(try #require(IPAddress("127.0.0.1"))))
        #expect(policy.allows(try #require(IPAddress("::ffff:127.0.0.1"))))
        #expect(!policy.allows(try #require(IPAddress("127.0.0.2"))))
        #expect(!policy.allows(try #require(IPAddress("::1"))))
        #expect(policy.allows(try #require(IPAddress("fd12::5"))))
        #expect(!policy.allows(try #require(IPAddress("10.0.0.1"))))
    }

    @Test func networksParseAndPrint() throws {
        #expect(IPNetwork("10.0.0.0/8")?.description == "10.0.0.0/8")
        #expect(IPNetwork("::1")?.description == "::1/128")
        #expect(IPNetwork("10.0.0.0/33") == nil)
        #expect(IPNetwork("10.0.0.0/") == nil)
        #expect(IPNetwork("example.com/8") == nil)
        #expect(IPAddress("[::1]")?.resolveText == "[::1]")
    }

    @Test func wipedBufferGrowsAndWipes() {
        let buffer = WipedBuffer()
        for _ in 0..<100 { buffer.append(contentsOf: Array("0123456789".utf8)) }
        #expect(buffer.count == 1000)
        #expect(buffer.withUnsafeBytes { $0.prefix(3).elementsEqual(Array("012".utf8)) })
        buffer.wipe()
        #expect(buffer.count == 0)
        #expect("\(buffer)" == "WipedBuffer(0 bytes)")
    }
}
