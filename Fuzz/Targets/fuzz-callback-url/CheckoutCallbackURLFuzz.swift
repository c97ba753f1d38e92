import FuzzSupport

@testable import Checkout

/// Callback URLs and registered callback prefixes (``CheckoutCallbackURL``, ``CheckoutCallbackPrefix``). The
/// input is a URL, optionally followed by a newline and a second URL tried against the first as a prefix.
/// Properties: a parsed URL writes back to text that parses to the same URL; a prefix allows itself; a URL
/// with items appended still parses and stays inside every prefix that allowed it; web URLs are https or a
/// loopback http.
@main
enum CheckoutCallbackURLFuzz {
    static func main() {
        FuzzDriver.run { bytes in
            let parts = bytes.split(separator: 0x0A, maxSplits: 1, omittingEmptySubsequences: false)
            let first = String(decoding: parts[0], as: UTF8.self)
            let second = parts.count > 1 ? String(decoding: parts[1], as: UTF8.self) : nil
            guard let url = try? CheckoutCallbackURL(parsing: first) else {
                _ = try? CheckoutCallbackPrefix(parsing: first)
                return
            }
            FuzzCheck.require(
                (try? CheckoutCallbackURL(parsing: url.description)) == url, "description does not round-trip")
            if url.scheme == "http" {
                FuzzCheck.require(CheckoutCallbackURL.isLoopback(url.host), "http to a remote host")
            }
            let appended = url.appending([("oauth_token", "a b&c"), ("checkoutId", "é/?#")])
            let parsedAppended = try? CheckoutCallbackURL(parsing: appended)
            FuzzCheck.require(parsedAppended != nil, "URL with appended items does not parse")
            if let prefix = try? CheckoutCallbackPrefix(parsing: first) {
                FuzzCheck.require(prefix.allows(url), "a prefix does not allow its own URL")
                if let parsedAppended { FuzzCheck.require(prefix.allows(parsedAppended), "appending left the prefix") }
            }
            if let second, let candidate = try? CheckoutCallbackURL(parsing: second),
                let prefix = try? CheckoutCallbackPrefix(parsing: first), prefix.allows(candidate)
            {
                FuzzCheck.require(candidate.scheme == url.scheme, "prefix allowed another scheme")
                if url.scheme == "http" || url.scheme == "https" {
                    FuzzCheck.require(
                        candidate.host == url.host && candidate.effectivePort == url.effectivePort,
                        "prefix allowed another origin")
                }
            }
        }
    }
}
