/// A callback URL parsed into the parts that decide where a browser goes: scheme, host, port and path (plus the
/// query the merchant put on it). Parsed strictly, by hand, so that what is compared is exactly what a browser
/// would follow: no user info (`https://good.example@evil.example`), no backslashes, no control characters or
/// spaces, no percent-encoded slashes, backslashes or dots in the path, no `.` or `..` segments, host names of
/// letters, digits, `-` and `.` only (internationalised names in their `xn--` form), no fragment.
///
/// `http` is accepted only for loopback hosts (`localhost`, `127.0.0.1`, `[::1]`), for local development; other
/// hosts need `https`. App schemes (`fancyshop://`, as the mobile SDKs use) may have an empty host. `javascript`,
/// `data`, `file`, `vbscript`, `blob` and `about` are refused outright.
public struct CheckoutCallbackURL: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Lower-case scheme (`https`, `fancyshop`).
    public let scheme: String
    /// Lower-case host; empty only for app schemes.
    public let host: String
    /// The explicit port, if any.
    public let port: Int?
    /// The path as written (`/shop/callback`); `/` when a web URL has none.
    public let path: String
    /// The query without `?`, if any.
    public let query: String?

    static let refusedSchemes: Set<String> = ["javascript", "data", "file", "vbscript", "blob", "about", "filesystem"]
    static let maximumLength = 2048

    /// Parses `text`.
    /// - Parameter allowQuery: false for registered prefixes, which are scheme, host, port and path only.
    /// - Throws: the reason as a sentence (the caller names the field).
    public init(parsing text: String, allowQuery: Bool = true) throws(CheckoutURLProblem) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { throw CheckoutURLProblem("must not be empty") }
        guard bytes.count <= Self.maximumLength else {
            throw CheckoutURLProblem("must be at most \(Self.maximumLength) characters")
        }
        for byte in bytes
        where byte <= 0x20 || byte >= 0x7F || byte == 0x5C || byte == 0x22 || byte == 0x3C
            || byte == 0x3E || byte == 0x60
        {
            throw CheckoutURLProblem(
                "must not contain spaces, control characters, quotes, angle brackets or backslashes")
        }
        // Scheme.
        guard let colon = bytes.firstIndex(of: 0x3A), colon > 0 else {
            throw CheckoutURLProblem("must be an absolute URL with a scheme, such as https://shop.example/callback")
        }
        let schemeBytes = bytes[..<colon]
        guard Self.isAlpha(schemeBytes.first!),
            schemeBytes.allSatisfy({ Self.isAlpha($0) || Self.isDigit($0) || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E })
        else { throw CheckoutURLProblem("has an invalid scheme") }
        let scheme = String(decoding: schemeBytes, as: UTF8.self).lowercased()
        guard !Self.refusedSchemes.contains(scheme) else {
            throw CheckoutURLProblem("uses a scheme that is not allowed")
        }
        guard bytes.count >= colon + 3, bytes[colon + 1] == 0x2F, bytes[colon + 2] == 0x2F else {
            throw CheckoutURLProblem("must start with scheme:// (such as https://)")
        }
        // Authority: up to the first '/', '?' or '#'.
        let authorityStart = colon + 3
        var index = authorityStart
        while index < bytes.count, bytes[index] != 0x2F, bytes[index] != 0x3F, bytes[index] != 0x23 { index += 1 }
        let authority = bytes[authorityStart..<index]
        guard !authority.contains(0x40) else { throw CheckoutURLProblem("must not contain user information (@)") }
        let (host, port) = try Self.parseAuthority(authority)
        let web = scheme == "http" || scheme == "https"
        if web {
            guard !host.isEmpty else { throw CheckoutURLProblem("must name a host") }
            if scheme == "http", !Self.isLoopback(host) {
                throw CheckoutURLProblem("must use https (http is allowed only for localhost)")
            }
        }
        // Path.
        let pathStart = index
        while index < bytes.count, bytes[index] != 0x3F, bytes[index] != 0x23 { index += 1 }
        let pathBytes = bytes[pathStart..<index]
        try Self.checkPath(pathBytes)
        var path = String(decoding: pathBytes, as: UTF8.self)
        if path.isEmpty, web { path = "/" }
        // Query and fragment.
        var query: String?
        if index < bytes.count, bytes[index] == 0x3F {
            let queryStart = index + 1
            while index < bytes.count, bytes[index] != 0x23 { index += 1 }
            guard allowQuery else { throw CheckoutURLProblem("must not have a query (register scheme, host and path)") }
            query = String(decoding: bytes[queryStart..<index], as: UTF8.self)
        }
        if index < bytes.count {
            throw CheckoutURLProblem("must not have a fragment (#)")
        }
        self.scheme = scheme
        self.host = host
        self.port = port
        self.path = path
        self.query = query
    }

    /// The port a browser connects to: the explicit one, else 80 for http, 443 for https, nil for app schemes.
    public var effectivePort: Int? {
        if let port { return port }
        switch scheme {
        case "http": return 80
        case "https": return 443
        default: return nil
        }
    }

    /// The URL written back out (lower-case scheme and host).
    public var description: String {
        var text = scheme + "://" + host
        if let port { text += ":" + String(port) }
        text += path
        if let query { text += "?" + query }
        return text
    }

    /// This URL with `items` added to its query, percent-encoded; earlier query items are kept.
    public func appending(_ items: [(String, String)]) -> String {
        var text = description
        var separator = query == nil ? "?" : (query!.isEmpty ? "" : "&")
        for (name, value) in items {
            text +=
                separator + CheckoutCallbackURL.percentEncoded(name) + "=" + CheckoutCallbackURL.percentEncoded(value)
            separator = "&"
        }
        return text
    }

    /// `text` with every byte outside A–Z, a–z, 0–9 and `-._~` percent-encoded (RFC 3986 unreserved).
    public static func percentEncoded(_ text: String) -> String {
        let hex: [UInt8] = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isAlpha(byte) || isDigit(byte) || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x7E {
                out.append(byte)
            } else {
                out += [0x25, hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func parseAuthority(_ authority: ArraySlice<UInt8>) throws(CheckoutURLProblem) -> (String, Int?) {
        var hostBytes = authority
        var port: Int?
        if authority.first == 0x5B {  // [IPv6]
            guard let close = authority.firstIndex(of: 0x5D) else { throw CheckoutURLProblem("has an invalid host") }
            hostBytes = authority[authority.startIndex...close]
            let inner = authority[(authority.startIndex + 1)..<close]
            guard !inner.isEmpty, inner.allSatisfy({ isHexDigit($0) || $0 == 0x3A || $0 == 0x2E }) else {
                throw CheckoutURLProblem("has an invalid host")
            }
            let rest = authority[(close + 1)...]
            if !rest.isEmpty {
                guard rest.first == 0x3A else { throw CheckoutURLProblem("has an invalid host") }
                port = try parsePort(rest.dropFirst())
            }
        } else {
            if let colon = authority.firstIndex(of: 0x3A) {
                hostBytes = authority[..<colon]
                port = try parsePort(authority[(colon + 1)...])
            }
            guard hostBytes.allSatisfy({ isAlpha($0) || isDigit($0) || $0 == 0x2D || $0 == 0x2E }) else {
                throw CheckoutURLProblem("has an invalid host (letters, digits, '-' and '.' only)")
            }
            if !hostBytes.isEmpty {
                guard hostBytes.first != 0x2E, hostBytes.last != 0x2E, hostBytes.first != 0x2D else {
                    throw CheckoutURLProblem("has an invalid host")
                }
            }
        }
        return (String(decoding: hostBytes, as: UTF8.self).lowercased(), port)
    }

    private static func parsePort(_ bytes: ArraySlice<UInt8>) throws(CheckoutURLProblem) -> Int {
        guard !bytes.isEmpty, bytes.count <= 5, bytes.allSatisfy(isDigit),
            let port = Int(String(decoding: bytes, as: UTF8.self)), (1...65535).contains(port)
        else { throw CheckoutURLProblem("has an invalid port") }
        return port
    }

    private static func checkPath(_ path: ArraySlice<UInt8>) throws(CheckoutURLProblem) {
        var index = path.startIndex
        while index < path.endIndex {
            if path[index] == 0x25 {
                guard index + 2 < path.endIndex, isHexDigit(path[index + 1]), isHexDigit(path[index + 2]) else {
                    throw CheckoutURLProblem("has an invalid percent-escape in its path")
                }
                let value = hexValue(path[index + 1]) << 4 | hexValue(path[index + 2])
                if value == 0x2F || value == 0x5C || value == 0x2E || value < 0x20 {
                    throw CheckoutURLProblem("must not encode '/', '\\' or '.' in its path")
                }
                index += 3
                continue
            }
            index += 1
        }
        for segment in path.split(separator: 0x2F, omittingEmptySubsequences: false)
        where segment.elementsEqual([0x2E]) || segment.elementsEqual([0x2E, 0x2E]) {
            throw CheckoutURLProblem("must not contain '.' or '..' path segments")
        }
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "127.0.0.1" || host == "[::1]"
    }

    static func isAlpha(_ byte: UInt8) -> Bool { (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) }
    static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
    static func isHexDigit(_ byte: UInt8) -> Bool {
        isDigit(byte) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }
    static func hexValue(_ byte: UInt8) -> UInt8 {
        isDigit(byte) ? byte - 0x30 : (byte | 0x20) - 0x61 + 10
    }
}

/// Why a URL was refused, as a sentence to put after the field name (`callbackUrl must use https`).
public struct CheckoutURLProblem: Error, Sendable, Equatable {
    public let reason: String
    init(_ reason: String) { self.reason = reason }
}

/// A registered callback URL prefix: a scheme, host and port that must match exactly, and a path prefix that
/// must match on a segment boundary (`/shop/cb` allows `/shop/cb` and `/shop/cb/done`, not `/shop/cbx`; a prefix
/// ending in `/` allows anything below it). An app-scheme prefix with an empty host (`fancyshop://`) allows
/// every URL of that scheme.
public struct CheckoutCallbackPrefix: Sendable, Hashable, Codable, CustomStringConvertible {
    public let url: CheckoutCallbackURL

    /// Parses a prefix; it may not carry a query or fragment.
    public init(parsing text: String) throws(CheckoutURLProblem) {
        url = try CheckoutCallbackURL(parsing: text, allowQuery: false)
    }

    public var description: String { url.description }

    /// True when a browser sent to `candidate` stays inside this prefix.
    public func allows(_ candidate: CheckoutCallbackURL) -> Bool {
        guard candidate.scheme == url.scheme else { return false }
        let web = url.scheme == "http" || url.scheme == "https"
        if !web, url.host.isEmpty, url.port == nil, url.path.isEmpty || url.path == "/" { return true }
        guard candidate.host == url.host, candidate.effectivePort == url.effectivePort else { return false }
        let prefixPath = url.path
        if prefixPath.isEmpty || prefixPath == "/" { return true }
        if prefixPath.hasSuffix("/") { return candidate.path.hasPrefix(prefixPath) }
        return candidate.path == prefixPath || candidate.path.hasPrefix(prefixPath + "/")
    }
}
