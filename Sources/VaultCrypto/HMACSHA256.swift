import COpenSSL
public import Foundation

/// HMAC-SHA256 over OpenSSL's one-shot `HMAC()`.
public enum HMACSHA256 {
    /// Bytes in a MAC.
    public static let byteCount = 32

    /// The 32-byte MAC of `message` under `key`.
    @inlinable
    public static func authenticationCode(for message: some ContiguousBytes, using key: SymmetricKey) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: byteCount) { out, initialized in
            let written = authenticationCode(for: message, using: key, into: UnsafeMutableRawBufferPointer(out))
            initialized = written
        }
    }

    /// Writes the MAC into `output` (at least 32 bytes) and returns the bytes written. (Inlinable down to the bytes,
    /// so that callers run it specialized.)
    @inlinable @discardableResult
    public static func authenticationCode(
        for message: some ContiguousBytes,
        using key: SymmetricKey,
        into output: UnsafeMutableRawBufferPointer
    ) -> Int {
        message.withUnsafeBytes { authenticationCode(forBytes: $0, using: key, into: output) }
    }

    /// Writes the MAC of `data` into `output` (at least 32 bytes) and returns the bytes written.
    @discardableResult
    public static func authenticationCode(
        forBytes data: UnsafeRawBufferPointer,
        using key: SymmetricKey,
        into output: UnsafeMutableRawBufferPointer
    ) -> Int {
        precondition(output.count >= byteCount)
        do {
            try key.contexts.withMAC(key: key) { context in
                var length = 0
                let status =
                    (data.count == 0
                        || EVP_MAC_update(context, data.baseAddress?.assumingMemoryBound(to: UInt8.self), data.count)
                            == 1)
                    && EVP_MAC_final(
                        context, output.baseAddress?.assumingMemoryBound(to: UInt8.self), &length, output.count)
                        == 1
                guard status, length == byteCount else { throw CryptoError(.openSSLFailure, "HMAC failed") }
            }
        } catch {
            // Only an OpenSSL internal failure gets here; a wrong MAC would be worse than stopping.
            fatalError("OpenSSL HMAC-SHA256 failed")
        }
        return byteCount
    }

    /// Checks `code` against the MAC of `message`, in constant time.
    public static func isValid(
        _ code: some ContiguousBytes, authenticating message: some ContiguousBytes, using key: SymmetricKey
    ) -> Bool {
        ConstantTime.equals(authenticationCode(for: message, using: key), code)
    }
}
