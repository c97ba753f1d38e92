public import Configuration
import MangopayAPI
public import VaultCore

/// Settings that start a daemon which works, but not as its operator probably wants: told once at start-up.
public enum StartupChecks {
    /// Browser tokenization and `checkoutOrigins` (docs/operations.md, "Browser tokenization and CORS").
    ///
    /// The rule: a browser may post card data to `/tokenize/…` only from an origin in `checkoutOrigins` (or any
    /// with `*`) or from the daemon's own origin (`publicURL`'s, where its hosted pages live); others are refused
    /// before the card is read. With `checkoutOrigins` empty, a merchant's page is therefore served from the
    /// daemon's own origin or cannot tokenize in the browser at all. That is expected on a loopback `publicURL`
    /// (development on one machine: a notice), and most likely a mistake on any other (a warning naming the origin
    /// that is allowed).
    ///
    /// - Returns: the level logged, or nil when nothing was logged (for tests).
    @discardableResult
    public static func warnAboutBrowserOrigins(_ configuration: CardVaultConfiguration, logger: Logger) -> LogLevel? {
        guard configuration.checkoutOrigins.isEmpty else { return nil }
        let own = TokenizationOrigin.origin(ofURL: configuration.publicURL) ?? configuration.publicURL
        let level: LogLevel = TokenizationOrigin.isLoopback(url: configuration.publicURL) ? .notice : .warning
        logger.log(
            level,
            "checkoutOrigins is empty: browsers may tokenize cards only from the daemon's own origin; a merchant page "
                + "on any other origin is refused (403, the registration stays usable). List the merchants' origins "
                + "in checkoutOrigins (CARDVAULT_CHECKOUT_ORIGINS)",
            ["allowedOrigin": .string(own), "setting": .string("checkoutOrigins")])
        return level
    }
}
