/// The CardKit module. See DESIGN.md section 2 for what it holds.
public enum CardKitModule {
    /// The module's name, for diagnostics.
    public static let name = "CardKit"
}
