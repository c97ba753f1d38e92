/// The Payments module. See DESIGN.md section 2 for what it holds.
public enum PaymentsModule {
    /// The module's name, for diagnostics.
    public static let name = "Payments"
}
