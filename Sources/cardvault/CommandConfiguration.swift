import CardVaultApp
import Configuration
import Foundation

/// The configuration every command reads, as `serve` does: `--config FILE`, else
/// `config/cardvault.json` when it exists, else the defaults; then the `CARDVAULT_…` environment
/// variables (README.md, "Configuration"). So an admin command run in the daemon's environment
/// finds the daemon's data and keys directories.
enum CommandConfiguration {
    static let defaultFile = "config/cardvault.json"

    /// - Throws: ``CommandFailure`` (exit 78) naming the bad field.
    static func load(explicitFile: String?) throws -> CardVaultConfiguration {
        let file = explicitFile ?? (FileManager.default.fileExists(atPath: defaultFile) ? defaultFile : nil)
        do {
            return try CardVaultConfiguration.load(file: file)
        } catch {
            throw CommandFailure("invalid configuration: \(error.message)", status: 78)
        }
    }
}
