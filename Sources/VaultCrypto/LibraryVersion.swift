import COpenSSL

/// The C library VaultCrypto runs on, for `cardvault version`.
public enum CryptoLibrary {
    /// The OpenSSL version string the process runs against (not the headers it was built with).
    public static var version: String { String(cString: OpenSSL_version(OPENSSL_VERSION)) }
}
