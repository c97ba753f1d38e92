import Configuration
import Foundation
import VaultCrypto
import VaultHSM

/// The master key inside a PKCS#11 token (`kek.provider: "pkcs11"`): the module, the token and the key's labels
/// come from the configuration, the user PIN from `kek.pinFile` (mode 0600) or the environment variable
/// `kek.pinEnvironment`. The daemon opens it at start, so it never starts sealed.
enum HSMCustody {
    /// Opens the configured key, or creates it in the token (`keys init --pkcs11`, `keys seal --pkcs11`).
    static func open(_ configuration: CardVaultConfiguration, create: Bool = false) throws -> PKCS11KeyEncryptionKey {
        let settings = configuration.kek
        guard let module = settings.module, let token = settings.tokenLabel else {
            throw CommandFailure(
                "kek.provider pkcs11 needs kek.module and kek.tokenLabel (CARDVAULT_KEK_MODULE, "
                    + "CARDVAULT_KEK_TOKEN_LABEL)", status: 78)
        }
        let pin = try readPIN(settings)
        do {
            if create {
                return try PKCS11KeyEncryptionKey.generate(
                    modulePath: module, tokenLabel: token, keyLabel: settings.keyLabel, pin: pin)
            }
            return try PKCS11KeyEncryptionKey.open(
                modulePath: module, tokenLabel: token, keyLabel: settings.keyLabel, pin: pin)
        } catch let error as HSMError {
            // A wrong PIN retried by a restarting service would lock the token: exit 78, which systemd does not
            // restart (config/cardvault.service); a failing operation may pass and is retried.
            throw CommandFailure(
                "cannot open the HSM key: \(error.message)", status: error.code == .operationFailed ? 1 : 78)
        }
    }

    /// The token's user PIN, in secure memory, without a trailing line break.
    private static func readPIN(_ settings: CardVaultConfiguration.KeyEncryptionKey) throws -> SecureBytes {
        if let path = settings.pinFile {
            let bytes: SecureBytes
            do {
                bytes = try KeyFile.readSecret(path)
            } catch let error as KeyRingError {
                throw CommandFailure("cannot read the HSM PIN: \(error.message)", status: 78)
            }
            let length = bytes.withUnsafeBytes { raw in
                var end = raw.count
                while end > 0, raw[end - 1] == UInt8(ascii: "\n") || raw[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                return end
            }
            return SecureBytes(count: length) { out in
                bytes.withUnsafeBytes { out.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<length])) }
            }
        }
        guard let text = getenv(settings.pinEnvironment).map({ String(cString: $0) }), !text.isEmpty else {
            throw CommandFailure(
                "the HSM PIN is missing: set kek.pinFile (a file of mode 0600) or the environment variable "
                    + settings.pinEnvironment, status: 78)
        }
        return SecureBytes(copying: Array(text.utf8))
    }
}
