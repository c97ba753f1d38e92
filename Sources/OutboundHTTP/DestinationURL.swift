/// An outbound destination URL, parsed strictly so that what the allow-list compares is exactly what libcurl
/// connects to: `https` only; no user info (`https://psp.example@evil.example`), no backslashes, spaces, control
/// characters, quotes, braces or angle brackets; no percent-encoded `/`, `\` or `.` and no `.` or `..` segments in
/// the path; host names of letters, digits, `-` and `.` only (internationalised names in their `xn--` form) or IP
/// literals; no fragment.
public struct DestinationURL: Sendable, Hashable, CustomStringConvertible {
    /// `https`, or `http` for a URL parsed with `allowPlainHTTP` (hooks to private addresses in development).
    public let scheme: String
    /// Lower-case host, IPv6 literals in brackets (`[::1]`).
    public let host: String
    /// The port connected to (443 unless given).
    public let port: Int
    /// Whether the port was written out.
    public let explicitPort: Bool
    /// The path as written; `/` when none.
    public let path: String
    /// The query without `?`, if any.
    public let query: String?

    public static let maximumLength = 2048

    /// Why a URL was refused, as a sentence to follow the field name (`Url must use https`).
    public struct Problem: Error, Sendable, Equatable {
        public let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// Parses `text`.
    /// - Parameters:
    ///   - allowQuery: false for allow-list prefixes (scheme, host, port and path only).
    ///   - allowPlainHTTP: also accept `http://` (the caller must then connect only to special-purpose addresses;
    ///     ``OutboundHTTPClient`` refuses any other for such a URL).
    public init(parsing text: String, allowQuery: Bool = true, allowPlainHTTP: Bool = false) throws(Problem) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { throw Problem("must not be empty") }
        guard bytes.count <= Self.maximumLength else {
            throw Problem("must be at most \(Self.maximumLength) characters")
        }
        for byte in bytes
        where byte <= 0x20 || byte >= 0x7F || byte == 0x5C || byte == 0x22 || byte == 0x3C || byte == 0x3E
            || byte == 0x60 || byte == 0x7B || byte == 0x7D || byte == 0x7C || byte == 0x5E
        {
            throw Problem("must not contain spaces, control characters, quotes, braces, angle brackets or backslashes")
        }
        guard let colon = bytes.firstIndex(of: 0x3A), colon > 0 else {
            throw Problem("must be an absolute https:// URL")
        }
        let scheme = String(decoding: bytes[..<colon], as: UTF8.self).lowercased()
        guard scheme == "https" || (allowPlainHTTP && scheme == "http") else { throw Problem("must use https") }
        guard bytes.count >= colon + 3, bytes[colon + 1] == 0x2F, bytes[colon + 2] == 0x2F else {
            throw Problem("must start with \(scheme)://")
        }
        let authorityStart = colon + 3
        var index = authorityStart
        while index < bytes.count, bytes[index] != 0x2F, bytes[index] != 0x3F, bytes[index] != 0x23 { index += 1 }
        let authority = bytes[authorityStart..<index]
        guard !authority.contains(0x40) else { throw Problem("must not contain user information (@)") }
        let (host, port) = try Self.parseAuthority(authority)
        guard !host.isEmpty else { throw Problem("must name a host") }
        let pathStart = index
        while index < bytes.count, bytes[index] != 0x3F, bytes[index] != 0x23 { index += 1 }
        let pathBytes = bytes[pathStart..<index]
        try Self.checkPath(pathBytes)
        var query: String?
        if index < bytes.count, bytes[index] == 0x3F {
            let queryStart = index + 1
            while index < bytes.count, bytes[index] != 0x23 { index += 1 }
            guard allowQuery else { throw Problem("must not have a query (list scheme, host, port and path)") }
            query = String(decoding: bytes[queryStart..<index], as: UTF8.self)
        }
        if index < bytes.count { throw Problem("must not have a fragment (#)") }
        self.scheme = scheme
        self.host = host
        self.port = port ?? (scheme == "http" ? 80 : 443)
        self.explicitPort = port != nil
        self.path = pathBytes.isEmpty ? "/" : String(decoding: pathBytes, as: UTF8.self)
        self.query = query
    }

    /// The host without IPv6 brackets, as DNS or `inet_pton` take it.
    public var bareHost: String {
        host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
    }

    /// The URL written back out, as libcurl receives it.
    public var description: String {
        var text = scheme + "://" + host
        if explicitPort { text += ":" + String(port) }
        text += path
        if let query { text += "?" + query }
        return text
    }

    private static func parseAuthority(_ authority: ArraySlice<UInt8>) throws(Problem) -> (String, Int?) {
        var hostBytes = authority
        var port: Int?
        if authority.first == 0x5B {
            guard let close = authority.firstIndex(of: 0x5D) else { throw Problem("has an invalid host") }
            hostBytes = authority[authority.startIndex...close]
            let inner = String(decoding: authority[(authority.startIndex + 1)..<close], as: UTF8.self)
            guard case .v6? = IPAddress(inner) else { throw Problem("has an invalid IPv6 host") }
            let rest = authority[(close + 1)...]
            if !rest.isEmpty {
                guard rest.first == 0x3A else { throw Problem("has an invalid host") }
                port = try parsePort(rest.dropFirst())
            }
        } else {
            if let colon = authority.firstIndex(of: 0x3A) {
                hostBytes = authority[..<colon]
                port = try parsePort(authority[(colon + 1)...])
            }
            guard hostBytes.allSatisfy({ isAlpha($0) || isDigit($0) || $0 == 0x2D || $0 == 0x2E }) else {
                throw Problem("has an invalid host (letters, digits, '-' and '.' only)")
            }
            if !hostBytes.isEmpty {
                guard hostBytes.first != 0x2E, hostBytes.last != 0x2E, hostBytes.first != 0x2D,
                    !hostBytes.elementsEqual([0x2E, 0x2E]), hostBytes.count <= 253
                else { throw Problem("has an invalid host") }
                // Dotted numbers must be a plain IPv4 address (no `0x7f.1`, `2130706433` or `127.1`).
                if hostBytes.allSatisfy({ isDigit($0) || $0 == 0x2E || isAlpha($0) }),
                    let last = String(decoding: hostBytes, as: UTF8.self).split(separator: ".").last,
                    last.allSatisfy({ $0.isNumber }) || last.lowercased().hasPrefix("0x")
                {
                    guard case .v4? = IPAddress(String(decoding: hostBytes, as: UTF8.self)),
                        hostBytes.split(separator: 0x2E).count == 4
                    else { throw Problem("has an invalid IPv4 host") }
                }
            }
        }
        return (String(decoding: hostBytes, as: UTF8.self).lowercased(), port)
    }

    private static func parsePort(_ bytes: ArraySlice<UInt8>) throws(Problem) -> Int {
        guard !bytes.isEmpty, bytes.count <= 5, bytes.allSatisfy(isDigit),
            let port = Int(String(decoding: bytes, as: UTF8.self)), (1...65535).contains(port)
        else { throw Problem("has an invalid port") }
        return port
    }

    private static func checkPath(_ path: ArraySlice<UInt8>) throws(Problem) {
        if let first = path.first, first != 0x2F { throw Problem("has an invalid path") }
        var index = path.startIndex
        while index < path.endIndex {
            if path[index] == 0x25 {
                guard index + 2 < path.endIndex, isHexDigit(path[index + 1]), isHexDigit(path[index + 2]) else {
                    throw Problem("has an invalid percent-escape in its path")
                }
                let value = hexValue(path[index + 1]) << 4 | hexValue(path[index + 2])
                if value == 0x2F || value == 0x5C || value == 0x2E || value < 0x20 || value >= 0x7F {
                    throw Problem("must not percent-encode '/', '\\', '.' or control characters in its path")
                }
                index += 3
                continue
            }
            index += 1
        }
        for segment in path.split(separator: 0x2F, omittingEmptySubsequences: false)
        where segment.elementsEqual([0x2E]) || segment.elementsEqual([0x2E, 0x2E]) {
            throw Problem("must not contain '.' or '..' path segments")
        }
    }

    static func isAlpha(_ byte: UInt8) -> Bool { (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) }
    static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
    static func isHexDigit(_ byte: UInt8) -> Bool {
        isDigit(byte) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }
    static func hexValue(_ byte: UInt8) -> UInt8 { isDigit(byte) ? byte - 0x30 : (byte | 0x20) - 0x61 + 10 }
}

/// An allow-listed destination prefix: host and port must match exactly, and the path must start with the
/// prefix's path on a segment boundary (`/psp` allows `/psp` and `/psp/charge`, not `/pspx`; a prefix ending in
/// `/` allows anything below it).
public struct DestinationPrefix: Sendable, Hashable, CustomStringConvertible {
    public let url: DestinationURL

    /// Parses a prefix (no query or fragment).
    public init(parsing text: String) throws(DestinationURL.Problem) {
        url = try DestinationURL(parsing: text, allowQuery: false)
    }

    public var description: String { url.description }

    /// True when `candidate` lies inside this prefix.
    public func allows(_ candidate: DestinationURL) -> Bool {
        guard candidate.scheme == url.scheme, candidate.host == url.host, candidate.port == url.port else {
            return false
        }
        let prefix = url.path
        if prefix == "/" { return true }
        if prefix.hasSuffix("/") { return candidate.path.hasPrefix(prefix) }
        return candidate.path == prefix || candidate.path.hasPrefix(prefix + "/")
    }
}
