import Foundation
import Testing

@testable import CardKit

@Suite struct CountryTableTests {
    @Test func longestPrefixAndMostSpecificRangeWin() {
        let table = CountryTable(bins: ["4": "US", "497010": "FR"], ipv4: ["10.0.0.0/8": "DE", "10.1.0.0/16": "AT"])
        #expect(table.country(forBIN: "49701071") == "FR")
        #expect(table.country(forBIN: "41111111") == "US")
        #expect(table.country(forBIN: "51111111") == nil)
        #expect(table.country(forBIN: "") == nil)
        #expect(table.country(forIP: "10.1.2.3") == "AT")
        #expect(table.country(forIP: "10.2.2.3") == "DE")
        #expect(table.country(forIP: "11.0.0.1") == nil)
        #expect(table.country(forIP: "2001:db8::1") == nil)
        #expect(table.country(forIP: "10.1.2") == nil)
        #expect(table.country(forIP: "10.1.2.256") == nil)
    }

    @Test(arguments: [
        ("0.0.0.0", UInt32(0)), ("255.255.255.255", UInt32.max), ("10.1.2.3", UInt32(0x0A01_0203)),
        ("010.001.002.003", UInt32(0x0A01_0203)), ("192.0.2.255", UInt32(0xC000_02FF)),
    ])
    func dottedAddressesParse(text: String, value: UInt32) {
        #expect(CountryTable.parseIPv4(text) == value)
    }

    @Test(arguments: [
        "", ".", "1.2.3", "1.2.3.4.5", "1..3.4", ".1.2.3", "1.2.3.", "256.0.0.1", "1.2.3.256", "1.2.3.1000",
        "0001.2.3.4", "+1.2.3.4", "1.2.3.-4", " 1.2.3.4", "1.2.3.4 ", "1.2.3.4/8", "a.b.c.d", "1.2.3.4\u{0}",
        "١.٢.٣.٤",
    ])
    func malformedAddressesAreRefused(text: String) {
        #expect(CountryTable.parseIPv4(text) == nil)
    }

    /// Every address of a few blocks, against the rule written plainly: the longest matching block wins.
    @Test func matchesThePlainRuleOverWholeBlocks() {
        let ranges = [
            "10.0.0.0/8": "DE", "10.1.0.0/16": "AT", "10.1.2.0/24": "CH", "10.1.2.128/25": "LI", "10.1.2.7/32": "MC",
            "0.0.0.0/0": "ZZ", "11.0.0.0/33": "XX", "12.0.0/8": "XX", "13.0.0.0": "XX", "14.0.0.0/-1": "XX",
            "15.0.0.0/+8": "XX",
        ]
        let table = CountryTable(bins: [:], ipv4: ranges)
        func plain(_ address: UInt32) -> String? {
            var best: (bits: Int, country: String)?
            for (cidr, country) in ranges {
                let parts = cidr.split(separator: "/")
                guard parts.count == 2, let bits = Int(parts[1]), parts[1].first != "+", (0...32).contains(bits),
                    let base = CountryTable.parseIPv4(String(parts[0]))
                else { continue }
                let mask: UInt32 = bits == 0 ? 0 : ~UInt32(0) << (32 - bits)
                if address & mask == base & mask, bits > (best?.bits ?? -1) { best = (bits, country) }
            }
            return best?.country
        }
        for block: UInt32 in [0x0A01_0200, 0x0A01_0000, 0x0A00_0000, 0x0B00_0000, 0x0C00_0000, 0xFFFF_FF00] {
            for low in 0..<UInt32(256) {
                let address = block | low
                let text = "\(address >> 24).\(address >> 16 & 255).\(address >> 8 & 255).\(address & 255)"
                #expect(table.country(forIP: text) == plain(address), "\(text)")
            }
        }
        #expect(table.country(forIP: "10.1.2.7") == "MC")
        #expect(table.country(forIP: "10.1.2.200") == "LI")
        #expect(table.country(forIP: "11.0.0.1") == "ZZ")
    }

    @Test func twoRangesOfOneLengthOverTheSameNetworkAlwaysGiveTheSameAnswer() {
        // 10.0.0.0/8 and 10.9.9.9/8 are one network written twice: the answer must not depend on dictionary order.
        for _ in 0..<20 {
            let table = CountryTable(bins: [:], ipv4: ["10.9.9.9/8": "BE", "10.0.0.0/8": "NL"])
            #expect(table.country(forIP: "10.200.1.1") == "NL")
        }
    }

    @Test func changingTheTablesChangesTheAnswers() {
        var table = CountryTable(bins: ["4": "US"], ipv4: ["10.0.0.0/8": "DE"])
        table.bins["49"] = "FR"
        table.ipv4["10.1.0.0/16"] = "AT"
        #expect(table.country(forBIN: "4970") == "FR")
        #expect(table.country(forIP: "10.1.0.1") == "AT")
        table.ipv4 = [:]
        table.bins.removeValue(forKey: "49")
        #expect(table.country(forIP: "10.1.0.1") == nil)
        #expect(table.country(forBIN: "4970") == "US")
        #expect(table == CountryTable(bins: ["4": "US"], ipv4: [:]))
    }

    @Test func decodesAndEncodesTheTwoTables() throws {
        let json = #"{"bins": {"4111": "US"}, "ipv4": {"203.0.113.0/24": "GB"}}"#
        let table = try JSONDecoder().decode(CountryTable.self, from: Data(json.utf8))
        #expect(table.country(forBIN: "41111111") == "US")
        #expect(table.country(forIP: "203.0.113.9") == "GB")
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let text = String(decoding: try encoder.encode(table), as: UTF8.self)
        #expect(text == #"{"bins":{"4111":"US"},"ipv4":{"203.0.113.0\/24":"GB"}}"#)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(CountryTable.self, from: Data("{}".utf8)) }
    }
}
