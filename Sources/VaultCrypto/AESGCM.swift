import COpenSSL
public import Foundation

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
        try checkSizes(key: key, nonce: nonce)
        try key.contexts.withCipher(encrypting: true, key: key, pooled: nonce.count == nonceSize) { context in
            try start(context, encrypting: true, nonce: nonce)
            try update(context, encrypting: true, aad: aad)
            try update(context, encrypting: true, input: plaintext, output: ciphertext)
            var outLength: Int32 = 0
            var scratch = (UInt64(0), UInt64(0))
            let finished = withUnsafeMutableBytes(of: &scratch) { scratchBytes in
                EVP_EncryptFinal_ex(context, scratchBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), &outLength)
            }
            guard finished == 1,
                EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tag.count), tag.baseAddress) == 1
            else { throw CryptoError(.openSSLFailure, "cipher finalisation failed") }
        }
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
        try checkSizes(key: key, nonce: nonce)
        do {
            try key.contexts.withCipher(encrypting: false, key: key, pooled: nonce.count == nonceSize) { context in
                try start(context, encrypting: false, nonce: nonce)
                try update(context, encrypting: false, aad: aad)
                try update(context, encrypting: false, input: ciphertext, output: plaintext)
                guard
                    EVP_CIPHER_CTX_ctrl(
                        context, EVP_CTRL_GCM_SET_TAG, Int32(tag.count),
                        UnsafeMutableRawPointer(mutating: tag.baseAddress)) == 1
                else { throw CryptoError(.openSSLFailure, "tag set-up failed") }
                var outLength: Int32 = 0
                var scratch = (UInt64(0), UInt64(0))
                let verified = withUnsafeMutableBytes(of: &scratch) { scratchBytes in
                    EVP_DecryptFinal_ex(
                        context, scratchBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), &outLength)
                }
                guard verified == 1 else { throw CryptoError(.authenticationFailed, "authentication failed") }
            }
        } catch {
            OPENSSL_cleanse(plaintext.baseAddress, plaintext.count)
            throw error
        }
    }

    private static func checkSizes(key: SymmetricKey, nonce: UnsafeRawBufferPointer) throws {
        guard key.byteCount == keySize else { throw CryptoError(.invalidKeySize, "AES-256-GCM needs a 32-byte key") }
        guard nonce.count > 0 else { throw CryptoError(.invalidNonceSize, "empty nonce") }
    }

    /// Sets the nonce on a keyed context. Pooled contexts keep the 12-byte default; other lengths (only the
    /// published vectors use them) come on fresh contexts, so the length is set only there.
    private static func start(_ context: OpaquePointer, encrypting: Bool, nonce: UnsafeRawBufferPointer) throws {
        let initialise = encrypting ? EVP_EncryptInit_ex2 : EVP_DecryptInit_ex2
        guard
            nonce.count == nonceSize
                || EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(nonce.count), nil) == 1,
            initialise(context, nil, nil, nonce.baseAddress?.assumingMemoryBound(to: UInt8.self), nil) == 1
        else { throw CryptoError(.openSSLFailure, "nonce set-up failed") }
    }

    private static func update(_ context: OpaquePointer, encrypting: Bool, aad: UnsafeRawBufferPointer) throws {
        guard aad.count > 0 else { return }
        var outLength: Int32 = 0
        let update = encrypting ? EVP_EncryptUpdate : EVP_DecryptUpdate
        guard
            update(context, nil, &outLength, aad.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(aad.count))
                == 1
        else { throw CryptoError(.openSSLFailure, "AAD update failed") }
    }

    private static func update(
        _ context: OpaquePointer, encrypting: Bool, input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer
    ) throws {
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
}
