import Testing

@testable import Checkout

@Suite struct CheckoutCallbackURLTests {
    @Test func parsesTheParts() throws {
        let url = try CheckoutCallbackURL(parsing: "HTTPS://Shop.Example:8443/checkout/return?order=7")
        #expect(url.scheme == "https")
        #expect(url.host == "shop.example")
        #expect(url.port == 8443)
        #expect(url.path == "/checkout/return")
        #expect(url.query == "order=7")
        #expect(url.description == "https://shop.example:8443/checkout/return?order=7")
    }

    @Test(arguments: [
        ("", "must not be empty"),
        ("shop.example/cb", "scheme"),
        ("https://good.example@evil.example/cb", "user information"),
        ("https://evil.example\\@good.example/", "backslashes"),
        ("https://shop.example/cb path", "spaces"),
        ("javascript://shop.example/%0aalert(1)", "not allowed"),
        ("data://text/html", "not allowed"),
        ("http://shop.example/cb", "https"),
        ("https:///cb", "host"),
        ("https://shop.example/cb#frag", "fragment"),
        ("https://shop.example/cb/%2e%2e/admin", "encode"),
        ("https://shop.example/cb/%2F", "encode"),
        ("https://shop.example/cb/../admin", "segments"),
        ("https://shop.example:0/cb", "port"),
        ("https://shop.example:99999/cb", "port"),
        ("https://shop_example/cb", "invalid host"),
        ("https:/shop.example/cb", "scheme://"),
    ])
    func refuses(_ text: String, _ reason: String) {
        #expect {
            _ = try CheckoutCallbackURL(parsing: text)
        } throws: { error in
            (error as? CheckoutURLProblem)?.reason.contains(reason) == true
        }
    }

    @Test func allowsPlainHTTPOnlyForLoopback() throws {
        #expect(try CheckoutCallbackURL(parsing: "http://127.0.0.1:9000/cb").effectivePort == 9000)
        #expect(try CheckoutCallbackURL(parsing: "http://localhost/cb").effectivePort == 80)
        #expect(throws: CheckoutURLProblem.self) {
            try CheckoutCallbackURL(parsing: "http://127.0.0.1.evil.example/cb")
        }
    }

    @Test func prefixesMayNotCarryAQuery() {
        #expect(throws: CheckoutURLProblem.self) { try CheckoutCallbackPrefix(parsing: "https://shop.example/cb?x=1") }
    }

    @Test(arguments: [
        ("https://shop.example/cb", true),
        ("https://shop.example/cb?order=1", true),
        ("https://shop.example/cb/done", true),
        ("https://SHOP.example:443/cb", true),
        ("https://shop.example/cbx", false),
        ("https://shop.example/c", false),
        ("https://shop.example/", false),
        ("https://shop.example.evil.example/cb", false),
        ("https://evilshop.example/cb", false),
        ("https://sub.shop.example/cb", false),
        ("https://shop.example:8443/cb", false),
        ("http://localhost/cb", false),
        ("fancyshop://shop.example/cb", false),
    ])
    func prefixMatchesOnParsedParts(_ candidate: String, _ allowed: Bool) throws {
        let prefix = try CheckoutCallbackPrefix(parsing: "https://shop.example/cb")
        #expect(prefix.allows(try CheckoutCallbackURL(parsing: candidate)) == allowed)
    }

    @Test func trailingSlashPrefixAllowsEverythingBelow() throws {
        let prefix = try CheckoutCallbackPrefix(parsing: "https://shop.example/return/")
        #expect(prefix.allows(try CheckoutCallbackURL(parsing: "https://shop.example/return/x/y")))
        #expect(!prefix.allows(try CheckoutCallbackURL(parsing: "https://shop.example/return")))
    }

    @Test func appSchemePrefixWithoutHostAllowsThatSchemeOnly() throws {
        let prefix = try CheckoutCallbackPrefix(parsing: "fancyshop://")
        #expect(prefix.allows(try CheckoutCallbackURL(parsing: "fancyshop://callback")))
        #expect(prefix.allows(try CheckoutCallbackURL(parsing: "fancyshop://")))
        #expect(!prefix.allows(try CheckoutCallbackURL(parsing: "otherapp://callback")))
        #expect(!prefix.allows(try CheckoutCallbackURL(parsing: "https://fancyshop.example/")))
    }

    @Test func appendsEncodedItemsAfterTheMerchantsQuery() throws {
        let url = try CheckoutCallbackURL(parsing: "https://shop.example/cb?order=7")
        #expect(
            url.appending([("oauth_token", "mptx1"), ("note", "a b&c=d")])
                == "https://shop.example/cb?order=7&oauth_token=mptx1&note=a%20b%26c%3Dd")
        let bare = try CheckoutCallbackURL(parsing: "https://shop.example/cb")
        #expect(bare.appending([("mpstatus", "cancel")]) == "https://shop.example/cb?mpstatus=cancel")
    }
}
