import HTTPServer
import VaultCrypto

/// What the running binary is, for `cardvault version` and the `cardvault_build_info` series of `/metrics`.
public enum BuildInfo {
    /// The CardVault release.
    public static let version = "0.1.0"

    /// The Swift compiler the binary was built with (major.minor).
    public static var swiftCompiler: String {
        #if compiler(>=6.4)
        "6.4+"
        #elseif compiler(>=6.3)
        "6.3"
        #elseif compiler(>=6.2)
        "6.2"
        #else
        "older"
        #endif
    }

    /// The build configuration (`release` or `debug`).
    public static var configuration: String {
        #if DEBUG
        "debug"
        #else
        "release"
        #endif
    }

    /// `cardvault_build_info{…} 1`, with the versions of the C libraries the process runs against.
    public static func prometheusText(storeBackend: String) -> String {
        var text = "# HELP cardvault_build_info The running build: versions of CardVault, its compiler and libraries.\n"
        text += "# TYPE cardvault_build_info gauge\n"
        text += "cardvault_build_info{version=\"" + version + "\",swift=\"" + swiftCompiler + "\",configuration=\""
        text += configuration + "\",openssl=\"" + label(CryptoLibrary.version) + "\",libmicrohttpd=\""
        text += label(HTTPServer.libraryVersion) + "\",store=\"" + storeBackend + "\"} 1\n"
        return text
    }

    /// A library's version string as a label value: printable ASCII without quotes or backslashes.
    private static func label(_ text: String) -> String {
        String(
            String.UnicodeScalarView(
                text.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7F && $0 != "\"" && $0 != "\\" }
            ).prefix(64))
    }
}
