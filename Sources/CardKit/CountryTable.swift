/// A small offline table of card BIN prefixes and IPv4 ranges to ISO 3166 alpha-2 countries, for
/// the risk engine's country rule. Longest matching BIN prefix wins; ranges are CIDR blocks.
public struct CountryTable: Sendable, Codable, Equatable {
    /// BIN prefix (digits) → country.
    public var bins: [String: String] { didSet { prefixes = Self.prefixes(bins) } }
    /// IPv4 CIDR (`"81.0.0.0/8"`) → country. Entries that are not a dotted address, `/`, and 0 to 32 match nothing.
    public var ipv4: [String: String] { didSet { ranges = Self.ranges(ipv4) } }

    /// `bins` as UTF-8 prefixes, longest first (a pay-in looks up its card's country on each request).
    private var prefixes: [(prefix: [UInt8], country: String)]
    /// `ipv4` parsed once, most specific first (ties: the smaller network text first, so the order is fixed).
    private var ranges: [(base: UInt32, mask: UInt32, country: String)]

    private enum CodingKeys: String, CodingKey { case bins, ipv4 }

    public init(bins: [String: String], ipv4: [String: String]) {
        self.bins = bins
        self.ipv4 = ipv4
        self.prefixes = Self.prefixes(bins)
        self.ranges = Self.ranges(ipv4)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            bins: try container.decode([String: String].self, forKey: .bins),
            ipv4: try container.decode([String: String].self, forKey: .ipv4))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(bins, forKey: .bins)
        try container.encode(ipv4, forKey: .ipv4)
    }

    public static func == (lhs: CountryTable, rhs: CountryTable) -> Bool {
        lhs.bins == rhs.bins && lhs.ipv4 == rhs.ipv4
    }

    /// The sandbox default: the Mangopay test BINs are French; documentation ranges (RFC 5737)
    /// stand in for a few countries so tests and demos can exercise the rule.
    public static let sandbox = CountryTable(
        bins: ["497010": "FR", "503395": "BE", "375989": "FR", "4111": "US", "5555": "US"],
        ipv4: ["192.0.2.0/24": "FR", "198.51.100.0/24": "US", "203.0.113.0/24": "GB", "127.0.0.0/8": "FR"]
    )

    /// The country of a card from the leading digits of its number (6 to 8 are enough).
    public func country(forBIN leadingDigits: String) -> String? {
        var digits = leadingDigits
        return digits.withUTF8 { bytes in prefixes.first { bytes.starts(with: $0.prefix) }?.country }
    }

    /// The country of an IPv4 address in dotted form; nil for IPv6 or unknown ranges.
    public func country(forIP address: String) -> String? {
        guard let value = Self.parseIPv4(address) else { return nil }
        return ranges.first { value & $0.mask == $0.base }?.country
    }

    /// A dotted IPv4 address (four decimal octets of 1 to 3 digits, each at most 255) as a number.
    package static func parseIPv4(_ text: String) -> UInt32? {
        var text = text
        return text.withUTF8 { bytes -> UInt32? in
            var value: UInt32 = 0
            var octet: UInt32 = 0
            var digits = 0
            var dots = 0
            for byte in bytes {
                if byte == UInt8(ascii: ".") {
                    guard digits > 0, dots < 3 else { return nil }
                    value = value << 8 | octet
                    octet = 0
                    digits = 0
                    dots += 1
                } else if byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), digits < 3 {
                    octet = octet * 10 + UInt32(byte - UInt8(ascii: "0"))
                    digits += 1
                    guard octet <= 255 else { return nil }
                } else {
                    return nil
                }
            }
            guard digits > 0, dots == 3 else { return nil }
            return value << 8 | octet
        }
    }

    private static func prefixes(_ bins: [String: String]) -> [(prefix: [UInt8], country: String)] {
        bins.map { (Array($0.key.utf8), $0.value) }.sorted { $0.prefix.count > $1.prefix.count }
    }

    private static func ranges(_ cidrs: [String: String]) -> [(base: UInt32, mask: UInt32, country: String)] {
        let parsed = cidrs.compactMap { cidr, country -> (text: String, bits: Int, base: UInt32, country: String)? in
            let parts = cidr.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2, let base = parseIPv4(String(parts[0])), parts[1].utf8.count <= 2,
                parts[1].utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                let bits = Int(parts[1]), (0...32).contains(bits)
            else { return nil }
            return (cidr, bits, base, country)
        }
        return parsed.sorted { $0.bits != $1.bits ? $0.bits > $1.bits : $0.text < $1.text }.map { entry in
            let mask: UInt32 = entry.bits == 0 ? 0 : ~UInt32(0) << (32 - entry.bits)
            return (entry.base & mask, mask, entry.country)
        }
    }
}
