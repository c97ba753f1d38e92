import Foundation
import VaultCore

/// Gives each client (merchant) its own key for card fingerprints, so a fingerprint computed for
/// one client means nothing to another.
public protocol FingerprintKeySource: Sendable {
    /// The HMAC-SHA256 key for fingerprints of `clientId`.
    func fingerprintKey(forClient clientId: String) throws -> SymmetricKey
}

/// Derives per-client fingerprint keys from one secret with HKDF-SHA256 (info = client id), and
/// caches them. The keyring provides the secret; tests may use a random one.
public final class DerivedFingerprintKeys: FingerprintKeySource {
    private let secret: SymmetricKey
    private let cache = Locked<[String: SymmetricKey]>([:])
    private static let salt = Array("cardvault fingerprint key v1".utf8)

    public init(secret: SymmetricKey) {
        self.secret = secret
    }

    public func fingerprintKey(forClient clientId: String) throws -> SymmetricKey {
        if let key = cache.withLock({ $0[clientId] }) { return key }
        let key = try HKDF.deriveKey(inputKeyMaterial: secret, salt: Self.salt, info: Array(clientId.utf8))
        cache.withLock { $0[clientId] = key }
        return key
    }
}
