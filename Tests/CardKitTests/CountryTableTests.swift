import Testing

@testable import CardKit

@Suite struct CountryTableTests {
    @Test func longestPrefixAndMostSpecificRangeWin() {
        let table = CountryTable(bins: ["4": "US", "497010": "FR"], ipv4: ["10.0.0.0/8": "DE", "10.1.0.0/16": "AT"])
        #expect(table.country(forBIN: "49701071") == "FR")
        #expect(table.country(forBIN: "41111111") == "US")
        #expect(table.country(forBIN: "51111111") == nil)
        #expect(table.country(forIP: "10.1.2.3") == "AT")
        #expect(table.country(forIP: "10.2.2.3") == "DE")
        #expect(table.country(forIP: "11.0.0.1") == nil)
        #expect(table.country(forIP: "2001:db8::1") == nil)
        #expect(table.country(forIP: "10.1.2") == nil)
        #expect(table.country(forIP: "10.1.2.256") == nil)
    }
}
