import Foundation
import HTTPServer

/// Browser origins and the tokenization endpoint: which origin the daemon's own pages have, and how a refused
/// `Origin` header is written in the log.
public enum TokenizationOrigin {
    /// The origin (`scheme://host[:port]`, lower case, default port left out) a browser sends for pages under
    /// `url`; nil when `url` is not an absolute http or https URL.
    public static func origin(ofURL url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else { return nil }
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[" + host + "]" : host
        var origin = scheme + "://" + bracketed.lowercased()
        if let port = components.port, !(scheme == "http" && port == 80), !(scheme == "https" && port == 443) {
            origin += ":" + String(port)
        }
        return origin
    }

    /// True when `url`'s host is a loopback name or address (`localhost`, `127.0.0.0/8`, `::1`).
    public static func isLoopback(url: String) -> Bool {
        guard let host = URLComponents(string: url)?.host?.lowercased() else { return false }
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        return bare == "localhost" || bare.hasSuffix(".localhost") || bare == "::1" || bare.hasPrefix("127.")
    }

    /// An `Origin` header as it may appear in a log line: at most 120 characters, digit runs masked.
    static func loggable(_ origin: String) -> String {
        LogScrubber.maskDigitRuns(String(origin.prefix(120)))
    }
}
