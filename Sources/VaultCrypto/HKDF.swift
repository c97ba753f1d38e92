import COpenSSL
public import Foundation

/// HKDF with SHA-256 (RFC 5869), over OpenSSL's KDF API.
public enum HKDF {
    /// Derives `outputByteCount` bytes from input key material, salt and info.
    /// - Throws: ``CryptoError`` `.invalidLength` when the length is 0 or above 255 × 32.
    public static func deriveKey(
        inputKeyMaterial: SymmetricKey,
        salt: some ContiguousBytes = [UInt8](),
        info: some ContiguousBytes = [UInt8](),
        outputByteCount: Int = 32
    ) throws -> SymmetricKey {
        guard outputByteCount > 0, outputByteCount <= 255 * 32 else {
            throw CryptoError(.invalidLength, "HKDF-SHA256 output must be 1...8160 bytes")
        }
        guard let kdf = EVP_KDF_fetch(nil, "HKDF", nil) else {
            throw CryptoError(.openSSLFailure, "HKDF unavailable")
        }
        defer { EVP_KDF_free(kdf) }
        guard let context = EVP_KDF_CTX_new(kdf) else { throw CryptoError(.openSSLFailure, "HKDF context") }
        defer { EVP_KDF_CTX_free(context) }

        let empty: UInt8 = 0  // OpenSSL wants non-null pointers even for empty parameters
        let output = try SecureBytes(count: outputByteCount) { out in
            let status = withUnsafePointer(to: empty) { fallback in
                inputKeyMaterial.withUnsafeBytes { ikm in
                    salt.withUnsafeBytes { saltBytes in
                        info.withUnsafeBytes { infoBytes in
                            // OSSL_PARAM keeps the name and value pointers, so they must outlive the
                            // call: static strings and the buffers of these closures do.
                            func name(_ text: StaticString) -> UnsafePointer<CChar> {
                                UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
                            }
                            func octets(_ key: StaticString, _ bytes: UnsafeRawBufferPointer) -> OSSL_PARAM {
                                OSSL_PARAM_construct_octet_string(
                                    name(key),
                                    UnsafeMutableRawPointer(mutating: bytes.baseAddress ?? UnsafeRawPointer(fallback)),
                                    bytes.count)
                            }
                            var parameters: [OSSL_PARAM] = [
                                OSSL_PARAM_construct_utf8_string(
                                    name("digest"), UnsafeMutablePointer(mutating: name("SHA256")), 0),
                                octets("key", ikm),
                                octets("salt", saltBytes),
                                octets("info", infoBytes),
                                OSSL_PARAM_construct_end(),
                            ]
                            return EVP_KDF_derive(
                                context, out.baseAddress?.assumingMemoryBound(to: UInt8.self), out.count, &parameters)
                        }
                    }
                }
            }
            guard status == 1 else { throw CryptoError(.openSSLFailure, "HKDF derivation failed") }
        }
        return SymmetricKey(output)
    }
}
