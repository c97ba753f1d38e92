#if canImport(Glibc)
public import Glibc
#elseif canImport(Darwin)
public import Darwin
#endif

/// An IPv4 or IPv6 address, as the outbound client checks it before connecting.
public enum IPAddress: Sendable, Hashable, CustomStringConvertible {
    case v4(UInt32)
    /// The 16 bytes, high then low half, network order.
    case v6(UInt64, UInt64)

    /// Parses a literal (`10.0.0.1`, `::1`, `[::1]`).
    public init?(_ text: String) {
        var literal = text
        if literal.hasPrefix("["), literal.hasSuffix("]") { literal = String(literal.dropFirst().dropLast()) }
        var v4 = in_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 {
            self = .v4(UInt32(bigEndian: v4.s_addr))
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, literal, &v6) == 1 {
            self = Self.fromIn6(v6)
            return
        }
        return nil
    }

    static func fromIn6(_ address: in6_addr) -> IPAddress {
        var bytes = address
        return withUnsafeBytes(of: &bytes) { raw in
            var high: UInt64 = 0
            var low: UInt64 = 0
            for index in 0..<8 { high = high << 8 | UInt64(raw[index]) }
            for index in 8..<16 { low = low << 8 | UInt64(raw[index]) }
            return .v6(high, low)
        }
    }

    /// The address of a `sockaddr` (AF_INET or AF_INET6), else nil.
    public init?(socketAddress: UnsafePointer<sockaddr>) {
        switch Int32(socketAddress.pointee.sa_family) {
        case AF_INET:
            let address = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            self = .v4(UInt32(bigEndian: address.s_addr))
        case AF_INET6:
            let address = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            self = Self.fromIn6(address)
        default:
            return nil
        }
    }

    /// The IPv4 address an IPv6 address carries (IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4
    /// `2002:AABB:CCDD::`), else nil.
    public var embeddedIPv4: UInt32? {
        guard case .v6(let high, let low) = self else { return nil }
        if high == 0, low >> 32 == 0xFFFF { return UInt32(truncatingIfNeeded: low) }
        if high == 0x0064_FF9B_0000_0000, low >> 32 == 0 { return UInt32(truncatingIfNeeded: low) }
        if high >> 48 == 0x2002 { return UInt32(truncatingIfNeeded: high >> 16) }
        return nil
    }

    /// The text form, as libcurl's `CURLOPT_RESOLVE` takes it (IPv6 in brackets).
    public var resolveText: String {
        switch self {
        case .v4: description
        case .v6: "[" + description + "]"
        }
    }

    public var description: String {
        switch self {
        case .v4(let value):
            var address = in_addr(s_addr: value.bigEndian)
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            inet_ntop(AF_INET, &address, &text, socklen_t(text.count))
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        case .v6(let high, let low):
            var address = in6_addr()
            withUnsafeMutableBytes(of: &address) { raw in
                for index in 0..<8 { raw[index] = UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64(index))) }
                for index in 0..<8 { raw[8 + index] = UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64(index))) }
            }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            inet_ntop(AF_INET6, &address, &text, socklen_t(text.count))
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
}

/// An address range in CIDR notation (`10.0.0.0/8`, `::1/128`).
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    public let address: IPAddress
    public let prefixLength: Int

    /// Parses `address/length`, or a bare address (a single host).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2, let address = IPAddress(String(parts[0])) else { return nil }
        let maximum: Int
        switch address {
        case .v4: maximum = 32
        case .v6: maximum = 128
        }
        if parts.count == 2 {
            guard let length = Int(parts[1]), (0...maximum).contains(length), parts[1].allSatisfy(\.isNumber) else {
                return nil
            }
            self.prefixLength = length
        } else {
            self.prefixLength = maximum
        }
        self.address = address
    }

    init(_ address: IPAddress, _ prefixLength: Int) {
        self.address = address
        self.prefixLength = prefixLength
    }

    /// True when `candidate` lies in this range (an IPv4 range also holds the IPv4-mapped IPv6 form).
    public func contains(_ candidate: IPAddress) -> Bool {
        switch (address, candidate) {
        case (.v4(let network), .v4(let value)):
            return Self.matches(UInt64(network) << 32, UInt64(value) << 32, prefixLength)
        case (.v4, .v6):
            guard let embedded = candidate.embeddedIPv4 else { return false }
            return contains(.v4(embedded))
        case (.v6(let high, let low), .v6(let candidateHigh, let candidateLow)):
            if prefixLength <= 64 { return Self.matches(high, candidateHigh, prefixLength) }
            return high == candidateHigh && Self.matches(low, candidateLow, prefixLength - 64)
        case (.v6, .v4):
            return false
        }
    }

    private static func matches(_ network: UInt64, _ value: UInt64, _ bits: Int) -> Bool {
        guard bits > 0 else { return true }
        let mask: UInt64 = bits >= 64 ? .max : ~(UInt64.max >> UInt64(bits))
        return network & mask == value & mask
    }

    public var description: String { address.description + "/" + String(prefixLength) }
}

/// Which addresses outbound requests may connect to: any public address, and the special-purpose ranges
/// (private, loopback, link-local, carrier-grade NAT, multicast, documentation, unique-local ...) only when the
/// operator lists them in ``allowedSpecialNetworks``.
public struct AddressPolicy: Sendable, Hashable {
    /// Special-purpose ranges the operator allows (`127.0.0.1/32` for a local test receiver).
    public var allowedSpecialNetworks: [IPNetwork]

    public init(allowedSpecialNetworks: [IPNetwork] = []) {
        self.allowedSpecialNetworks = allowedSpecialNetworks
    }

    /// The IANA special-purpose ranges (RFC 6890 and successors) that are never reached unless allowed.
    public static let specialNetworks: [IPNetwork] = [
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
        "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
        "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
        "::/128", "::1/128", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32", "fc00::/7", "fe80::/10",
        "fec0::/10", "ff00::/8",
    ].map { IPNetwork($0)! }

    /// True when `address` is in a special-purpose range (an IPv6 address carrying an IPv4 one is judged by both).
    public static func isSpecial(_ address: IPAddress) -> Bool {
        if let embedded = address.embeddedIPv4, specialNetworks.contains(where: { $0.contains(.v4(embedded)) }) {
            return true
        }
        return specialNetworks.contains { $0.contains(address) }
    }

    /// True when an outbound request may connect to `address`.
    public func allows(_ address: IPAddress) -> Bool {
        guard Self.isSpecial(address) else { return true }
        return allowedSpecialNetworks.contains { $0.contains(address) }
    }
}
