/// The HTTPServer module. See DESIGN.md section 2 for what it holds.
public enum HTTPServerModule {
    /// The module's name, for diagnostics.
    public static let name = "HTTPServer"
}
