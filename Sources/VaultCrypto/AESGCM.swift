import Foundation
import COpenSSL

/// AES-256-GCM authenticated encryption over OpenSSL, with full 16-byte tags.
///
/// The combined form used across CardVault is `nonce (12) || ciphertext || tag (16)`.
public enum AESGCM {
    /// Bytes in a nonce (96 bits, the size GCM is designed for).
    public static let nonceSize = 12
    /// Bytes in an authentication tag (128 bits; never truncated).
    public static let tagSize = 16
    /// Bytes in a key (AES-256).
    public static let keySize = 32
    /// Bytes a sealed box adds to its plaintext.
    public static let overhead = nonceSize + tagSize

    /// Seals `plaintext` under `key` with a fresh random nonce, binding `authenticating` (AAD).
    /// - Returns: `nonce || ciphertext || tag`.
    /// - Throws: ``CryptoError`` `.invalidKeySize` for a key that is not 32 bytes.
    public static func seal(
        _ plaintext: some ContiguousBytes,
        using key: SymmetricKey,
        authenticating aad: some ContiguousBytes = [UInt8](),
        random: RandomPool = .shared
    ) throws -> [UInt8] {
        try plaintext.withUnsafeBytes { plain in
            try aad.withUnsafeBytes { aadBytes in
                try [UInt8](unsafeUninitializedCapacity: plain.count + overhead) { out, initialized in
                    let whole = UnsafeMutableRawBufferPointer(out)
                    let nonce = UnsafeMutableRawBufferPointer(rebasing: whole[0..<nonceSize])
                    random.fill(nonce)
                    try sealDetached(
                        plain, key: key, nonce: UnsafeRawBufferPointer(nonce), aad: aadBytes,
                        ciphertext: UnsafeMutableRawBufferPointer(rebasing: whole[nonceSize..<nonceSize + plain.count]),
                        tag: UnsafeMutableRawBufferPointer(rebasing: whole[(nonceSize + plain.count)...])
                    )
                    initialized = plain.count + overhead
                }
            }
        }
    }

    /// Opens a combined `nonce || ciphertext || tag` box sealed by ``seal(_:using:authenticating:random:)``.
    /// - Returns: the plaintext, in a buffer cleansed on release.
    /// - Throws: ``CryptoError`` `.authenticationFailed` if the box, key or AAD do not match (the
    ///   partial output is wiped), `.malformedSealedBox` if it is too short.
    public static func open(
        _ sealed: some ContiguousBytes,
        using key: SymmetricKey,
        authenticating aad: some ContiguousBytes = [UInt8]()
    ) throws -> SecureBytes {
        try sealed.withUnsafeBytes { box in
            guard box.count >= overhead else {
                throw CryptoError(.malformedSealedBox, "sealed box shorter than nonce and tag")
            }
            let plainCount = box.count - overhead
            return try aad.withUnsafeBytes { aadBytes in
                try SecureBytes(count: plainCount) { plain in
                    try openDetached(
                        UnsafeRawBufferPointer(rebasing: box[nonceSize..<nonceSize + plainCount]),
                        key: key,
                        nonce: UnsafeRawBufferPointer(rebasing: box[0..<nonceSize]),
                        aad: aadBytes,
                        tag: UnsafeRawBufferPointer(rebasing: box[(nonceSize + plainCount)...]),
                        plaintext: plain
                    )
                }
            }
        }
    }

    /// Seals into caller-provided buffers. Any nonce length OpenSSL accepts may be used here (the
    /// published test vectors include 8- and 60-byte IVs); production code uses 12.
    public static func sealDetached(
        _ plaintext: UnsafeRawBufferPointer,
        key: SymmetricKey,
        nonce: UnsafeRawBufferPointer,
        aad: UnsafeRawBufferPointer,
        ciphertext: UnsafeMutableRawBufferPointer,
        tag: UnsafeMutableRawBufferPointer
    ) throws {
        precondition(ciphertext.count >= plaintext.count && tag.count == tagSize)
        let context = try CipherContext(key: key, nonce: nonce, encrypting: true)
        try context.update(aad: aad)
        try context.update(input: plaintext, output: ciphertext)
        try context.finishEncryption(tag: tag)
    }

    /// Opens into a caller-provided buffer; on failure the output is wiped and the error thrown.
    public static func openDetached(
        _ ciphertext: UnsafeRawBufferPointer,
        key: SymmetricKey,
        nonce: UnsafeRawBufferPointer,
        aad: UnsafeRawBufferPointer,
        tag: UnsafeRawBufferPointer,
        plaintext: UnsafeMutableRawBufferPointer
    ) throws {
        precondition(plaintext.count >= ciphertext.count)
        guard tag.count == tagSize else { throw CryptoError(.authenticationFailed, "tag must be 16 bytes") }
        do {
            let context = try CipherContext(key: key, nonce: nonce, encrypting: false)
            try context.update(aad: aad)
            try context.update(input: ciphertext, output: plaintext)
            try context.finishDecryption(tag: tag)
        } catch {
            OPENSSL_cleanse(plaintext.baseAddress, plaintext.count)
            throw error
        }
    }
}

/// One `EVP_CIPHER_CTX`, owned and freed here.
final class CipherContext {
    private let context: OpaquePointer
    private let encrypting: Bool

    init(key: SymmetricKey, nonce: UnsafeRawBufferPointer, encrypting: Bool) throws {
        guard key.byteCount == AESGCM.keySize else {
            throw CryptoError(.invalidKeySize, "AES-256-GCM needs a 32-byte key")
        }
        guard nonce.count > 0 else { throw CryptoError(.invalidNonceSize, "empty nonce") }
        guard let context = EVP_CIPHER_CTX_new() else {
            throw CryptoError(.openSSLFailure, "EVP_CIPHER_CTX_new failed")
        }
        self.context = context
        self.encrypting = encrypting
        let initialise = encrypting ? EVP_EncryptInit_ex : EVP_DecryptInit_ex
        guard initialise(context, EVP_aes_256_gcm(), nil, nil, nil) == 1,
            nonce.count == AESGCM.nonceSize
                || EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(nonce.count), nil) == 1
        else { throw CryptoError(.openSSLFailure, "cipher initialisation failed") }
        let ok = key.withUnsafeBytes { keyBytes in
            initialise(
                context, nil, nil, keyBytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                nonce.baseAddress?.assumingMemoryBound(to: UInt8.self))
        }
        guard ok == 1 else { throw CryptoError(.openSSLFailure, "key set-up failed") }
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    func update(aad: UnsafeRawBufferPointer) throws {
        guard aad.count > 0 else { return }
        var outLength: Int32 = 0
        let update = encrypting ? EVP_EncryptUpdate : EVP_DecryptUpdate
        guard update(context, nil, &outLength, aad.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(aad.count)) == 1
        else { throw CryptoError(.openSSLFailure, "AAD update failed") }
    }

    func update(input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer) throws {
        guard input.count > 0 else { return }
        var outLength: Int32 = 0
        let update = encrypting ? EVP_EncryptUpdate : EVP_DecryptUpdate
        guard
            update(
                context, output.baseAddress?.assumingMemoryBound(to: UInt8.self), &outLength,
                input.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(input.count)) == 1,
            Int(outLength) == input.count
        else { throw CryptoError(.openSSLFailure, "cipher update failed") }
    }

    func finishEncryption(tag: UnsafeMutableRawBufferPointer) throws {
        var outLength: Int32 = 0
        var scratch = [UInt8](repeating: 0, count: 16)
        guard EVP_EncryptFinal_ex(context, &scratch, &outLength) == 1,
            EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tag.count), tag.baseAddress) == 1
        else { throw CryptoError(.openSSLFailure, "cipher finalisation failed") }
    }

    func finishDecryption(tag: UnsafeRawBufferPointer) throws {
        var outLength: Int32 = 0
        var scratch = [UInt8](repeating: 0, count: 16)
        guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tag.count), UnsafeMutableRawPointer(mutating: tag.baseAddress)) == 1
        else { throw CryptoError(.openSSLFailure, "tag set-up failed") }
        guard EVP_DecryptFinal_ex(context, &scratch, &outLength) == 1 else {
            throw CryptoError(.authenticationFailed, "authentication failed")
        }
    }
}
