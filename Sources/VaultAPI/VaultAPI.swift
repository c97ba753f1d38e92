/// The VaultAPI module. See DESIGN.md section 2 for what it holds.
public enum VaultAPIModule {
    /// The module's name, for diagnostics.
    public static let name = "VaultAPI"
}
