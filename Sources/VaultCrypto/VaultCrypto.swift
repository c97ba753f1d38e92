/// The VaultCrypto module. See DESIGN.md section 2 for what it holds.
public enum VaultCryptoModule {
    /// The module's name, for diagnostics.
    public static let name = "VaultCrypto"
}
