/// A small offline table of card BIN prefixes and IPv4 ranges to ISO 3166 alpha-2 countries, for
/// the risk engine's country rule. Longest matching BIN prefix wins; ranges are CIDR blocks.
public struct CountryTable: Sendable, Codable, Equatable {
    /// BIN prefix (digits) → country.
    public var bins: [String: String]
    /// IPv4 CIDR (`"81.0.0.0/8"`) → country.
    public var ipv4: [String: String]

    public init(bins: [String: String], ipv4: [String: String]) {
        self.bins = bins
        self.ipv4 = ipv4
    }

    /// The sandbox default: the Mangopay test BINs are French; documentation ranges (RFC 5737)
    /// stand in for a few countries so tests and demos can exercise the rule.
    public static let sandbox = CountryTable(
        bins: ["497010": "FR", "503395": "BE", "375989": "FR", "4111": "US", "5555": "US"],
        ipv4: ["192.0.2.0/24": "FR", "198.51.100.0/24": "US", "203.0.113.0/24": "GB", "127.0.0.0/8": "FR"]
    )

    /// The country of a card from the leading digits of its number (6 to 8 are enough).
    public func country(forBIN leadingDigits: String) -> String? {
        var best: (length: Int, country: String)?
        for (prefix, country) in bins where leadingDigits.hasPrefix(prefix) {
            if prefix.count > (best?.length ?? 0) { best = (prefix.count, country) }
        }
        return best?.country
    }

    /// The country of an IPv4 address in dotted form; nil for IPv6 or unknown ranges.
    public func country(forIP address: String) -> String? {
        guard let value = Self.parseIPv4(address) else { return nil }
        var best: (bits: Int, country: String)?
        for (cidr, country) in ipv4 {
            let parts = cidr.split(separator: "/")
            guard parts.count == 2, let base = Self.parseIPv4(String(parts[0])), let bits = Int(parts[1]),
                (0...32).contains(bits)
            else { continue }
            let mask: UInt32 = bits == 0 ? 0 : ~UInt32(0) << (32 - bits)
            if value & mask == base & mask, bits >= (best?.bits ?? -1) { best = (bits, country) }
        }
        return best?.country
    }

    package static func parseIPv4(_ text: String) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for part in parts {
            guard !part.isEmpty, part.count <= 3, let octet = UInt8(part) else { return nil }
            value = value << 8 | UInt32(octet)
        }
        return value
    }
}
