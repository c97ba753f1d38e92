/// The VaultStore module. See DESIGN.md section 2 for what it holds.
public enum VaultStoreModule {
    /// The module's name, for diagnostics.
    public static let name = "VaultStore"
}
