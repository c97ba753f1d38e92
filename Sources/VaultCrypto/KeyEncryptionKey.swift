/// The master key (key-encryption key, KEK) that wraps the data keys and the fingerprint secret.
///
/// Where it lives is its custody: in the locked arena (``MemoryKeyEncryptionKey``, rebuilt from shares or read
/// from a development key file) or inside a hardware token that never lets it out (PKCS#11). Every wrapped key
/// has the layout `nonce (12) || ciphertext || tag (16)` of AES-256-GCM, with `label` as authenticated data.
public protocol KeyEncryptionKey: Sendable {
    /// Seals `key` under the master key, binding `label` (never empty).
    func wrap(_ key: SymmetricKey, label: [UInt8]) throws -> [UInt8]
    /// Opens a key sealed by ``wrap(_:label:)`` into secure memory.
    /// - Throws: when the box, the key or the label do not match.
    func unwrap(_ sealed: [UInt8], label: [UInt8]) throws -> SymmetricKey
    /// 16 bytes stored beside the wrapped keys that tell this master key from another without revealing it.
    func checkValue() throws -> [UInt8]
}

/// A master key held in secure memory (``SymmetricKey``): AES-256-GCM wraps, HMAC-SHA256 check.
public struct MemoryKeyEncryptionKey: KeyEncryptionKey {
    let key: SymmetricKey

    /// Uses `key` (32 bytes) as the master key.
    public init(_ key: SymmetricKey) {
        self.key = key
    }

    public func wrap(_ key: SymmetricKey, label: [UInt8]) throws -> [UInt8] {
        try key.withUnsafeBytes { try AESGCM.seal($0, using: self.key, authenticating: label) }
    }

    public func unwrap(_ sealed: [UInt8], label: [UInt8]) throws -> SymmetricKey {
        SymmetricKey(try AESGCM.open(sealed, using: key, authenticating: label))
    }

    /// The first 16 bytes of HMAC-SHA256(master key, "cardvault master key check v1").
    public func checkValue() throws -> [UInt8] {
        Array(HMACSHA256.authenticationCode(for: Array("cardvault master key check v1".utf8), using: key).prefix(16))
    }
}
