import Foundation
import COpenSSL

/// HMAC-SHA256 over OpenSSL's one-shot `HMAC()`.
public enum HMACSHA256 {
    /// Bytes in a MAC.
    public static let byteCount = 32

    /// The 32-byte MAC of `message` under `key`.
    public static func authenticationCode(for message: some ContiguousBytes, using key: SymmetricKey) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: byteCount) { out, initialized in
            let written = authenticationCode(for: message, using: key, into: UnsafeMutableRawBufferPointer(out))
            initialized = written
        }
    }

    /// Writes the MAC into `output` (at least 32 bytes) and returns the bytes written.
    @discardableResult
    public static func authenticationCode(
        for message: some ContiguousBytes,
        using key: SymmetricKey,
        into output: UnsafeMutableRawBufferPointer
    ) -> Int {
        precondition(output.count >= byteCount)
        var length: UInt32 = 0
        let empty: UInt8 = 0  // OpenSSL wants non-null pointers even for empty input
        let result = withUnsafePointer(to: empty) { fallback in
            key.withUnsafeBytes { keyBytes in
                message.withUnsafeBytes { data in
                    HMAC(
                        EVP_sha256(), keyBytes.baseAddress ?? UnsafeRawPointer(fallback), Int32(keyBytes.count),
                        data.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? fallback, data.count,
                        output.baseAddress?.assumingMemoryBound(to: UInt8.self), &length)
                }
            }
        }
        precondition(result != nil && Int(length) == byteCount, "OpenSSL HMAC failed")
        return byteCount
    }

    /// Checks `code` against the MAC of `message`, in constant time.
    public static func isValid(
        _ code: some ContiguousBytes, authenticating message: some ContiguousBytes, using key: SymmetricKey
    ) -> Bool {
        ConstantTime.equals(authenticationCode(for: message, using: key), code)
    }
}
