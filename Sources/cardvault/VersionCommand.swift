import CardVaultApp
import HTTPServer
import VaultCrypto

/// `cardvault version`: the program's and its C libraries' versions.
enum VersionCommand: Command {
    static let name = "version"
    static let summary = "print the version of cardvault and of the C libraries it runs on"
    static let help = """
        usage: cardvault version

        Prints the CardVault version and the OpenSSL and libmicrohttpd versions in use.
        """

    static let version = BuildInfo.version

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        try arguments.finish()
        print("cardvault \(version)")
        print("openssl \(CryptoLibrary.version)")
        print("libmicrohttpd \(HTTPServer.libraryVersion)")
        return 0
    }
}
