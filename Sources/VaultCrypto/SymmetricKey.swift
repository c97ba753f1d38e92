import Foundation
public import VaultCore

/// A secret key held in ``SecureBytes``. It never prints: `description` is `[REDACTED]`.
public struct SymmetricKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, LogRedactable {
    let bytes: SecureBytes
    /// OpenSSL contexts keyed with this key, made on first use and reused.
    let contexts = KeyContexts()

    /// Wraps key material (copied into a secure buffer).
    public init(copying material: some Collection<UInt8>) {
        bytes = SecureBytes(copying: material)
    }

    /// Wraps a secure buffer without copying it.
    public init(_ bytes: SecureBytes) {
        self.bytes = bytes
    }

    /// A fresh random key of `byteCount` bytes (32 by default, for AES-256 and HMAC-SHA256).
    public static func random(byteCount: Int = 32, using random: any RandomSource = RandomPool.shared) -> SymmetricKey {
        SymmetricKey(SecureBytes(count: byteCount) { random.fill($0) })
    }

    /// The key length in bytes.
    public var byteCount: Int { bytes.count }

    /// Reads the key material. Do not let it escape the closure.
    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try bytes.withUnsafeBytes(body)
    }

    public var description: String { "[REDACTED]" }
    public var debugDescription: String { "[REDACTED]" }
    public var redactedLogText: String { "[REDACTED]" }
}
