import COpenSSL
import VaultCore

/// OpenSSL contexts already set up with one key, kept for reuse so that a seal, an open or a MAC pays
/// neither the algorithm fetch nor the key schedule again.
///
/// AES-GCM contexts keep their expanded key between operations (each operation only sets a new IV);
/// HMAC contexts keep their keyed state (`EVP_MAC_init` with a null key reuses it). Contexts are not
/// thread-safe, so each operation takes one from a small pool and puts it back; a pool that is empty
/// makes a new one. Everything is freed (and the key state cleansed by OpenSSL) in `deinit`.
final class KeyContexts: Sendable {
    /// Most idle contexts kept per kind; more concurrent operations simply make and free extras.
    private static let poolLimit = 8

    private let sealers = Locked<[ContextHandle]>([])
    private let openers = Locked<[ContextHandle]>([])
    private let macs = Locked<[ContextHandle]>([])
    private let algorithms = Locked<Algorithms?>(nil)

    /// The fetched algorithm objects, shared by all contexts of this key.
    /// Unchecked Sendable: fetched `EVP_CIPHER`/`EVP_MAC` objects are immutable and thread-safe in OpenSSL 3.
    private struct Algorithms: @unchecked Sendable {
        let cipher: OpaquePointer
        let mac: OpaquePointer
    }

    /// An owned C context pointer (sendable between threads: only one thread holds it at a time).
    /// Unchecked Sendable: the pool hands a context to one thread at a time (taken out under its lock).
    struct ContextHandle: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    init() {}

    deinit {
        for handle in sealers.withLock({ $0 }) + openers.withLock({ $0 }) { EVP_CIPHER_CTX_free(handle.pointer) }
        for handle in macs.withLock({ $0 }) { EVP_MAC_CTX_free(handle.pointer) }
        if let algorithms = algorithms.withLock({ $0 }) {
            EVP_CIPHER_free(algorithms.cipher)
            EVP_MAC_free(algorithms.mac)
        }
    }

    private func fetched() throws -> Algorithms {
        try algorithms.withLock { cached in
            if let cached { return cached }
            guard let cipher = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil) else {
                throw CryptoError(.openSSLFailure, "AES-256-GCM unavailable")
            }
            guard let mac = EVP_MAC_fetch(nil, "HMAC", nil) else {
                EVP_CIPHER_free(cipher)
                throw CryptoError(.openSSLFailure, "HMAC unavailable")
            }
            let made = Algorithms(cipher: cipher, mac: mac)
            cached = made
            return made
        }
    }

    /// Runs `body` with an AES-256-GCM context keyed with `key` for the given direction. With `pooled`
    /// false the context is made for this call only (for nonce lengths other than the pooled default).
    func withCipher<Result>(
        encrypting: Bool, key: SymmetricKey, pooled: Bool, _ body: (OpaquePointer) throws -> Result
    ) throws -> Result {
        let handle: ContextHandle
        let idle = !pooled ? nil : encrypting ? sealers.withLock { $0.popLast() } : openers.withLock { $0.popLast() }
        if let reused = idle {
            handle = reused
        } else {
            let cipher = try fetched().cipher
            guard let context = EVP_CIPHER_CTX_new() else {
                throw CryptoError(.openSSLFailure, "EVP_CIPHER_CTX_new failed")
            }
            let initialise = encrypting ? EVP_EncryptInit_ex2 : EVP_DecryptInit_ex2
            let status = key.withUnsafeBytes { keyBytes in
                initialise(context, cipher, keyBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), nil, nil)
            }
            guard status == 1 else {
                EVP_CIPHER_CTX_free(context)
                throw CryptoError(.openSSLFailure, "cipher key set-up failed")
            }
            handle = ContextHandle(pointer: context)
        }
        defer {
            if !pooled {
                EVP_CIPHER_CTX_free(handle.pointer)
            } else if encrypting {
                release(handle, to: sealers, free: EVP_CIPHER_CTX_free)
            } else {
                release(handle, to: openers, free: EVP_CIPHER_CTX_free)
            }
        }
        return try body(handle.pointer)
    }

    /// Runs `body` with an HMAC-SHA256 context keyed with `key` and ready for `EVP_MAC_update`.
    func withMAC<Result>(key: SymmetricKey, _ body: (OpaquePointer) throws -> Result) throws -> Result {
        let handle: ContextHandle
        if let reused = macs.withLock({ $0.popLast() }) {
            guard EVP_MAC_init(reused.pointer, nil, 0, nil) == 1 else {
                EVP_MAC_CTX_free(reused.pointer)
                throw CryptoError(.openSSLFailure, "HMAC re-initialisation failed")
            }
            handle = reused
        } else {
            guard let context = EVP_MAC_CTX_new(try fetched().mac) else {
                throw CryptoError(.openSSLFailure, "EVP_MAC_CTX_new failed")
            }
            let status = key.withUnsafeBytes { keyBytes in
                let empty: UInt8 = 0
                return withUnsafePointer(to: empty) { fallback in
                    var parameters = [
                        OSSL_PARAM_construct_utf8_string(
                            UnsafeRawPointer(("digest" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self),
                            UnsafeMutablePointer(
                                mutating: UnsafeRawPointer(("SHA256" as StaticString).utf8Start).assumingMemoryBound(
                                    to: CChar.self)),
                            0),
                        OSSL_PARAM_construct_end(),
                    ]
                    return EVP_MAC_init(
                        context, keyBytes.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? fallback, keyBytes.count,
                        &parameters)
                }
            }
            guard status == 1 else {
                EVP_MAC_CTX_free(context)
                throw CryptoError(.openSSLFailure, "HMAC key set-up failed")
            }
            handle = ContextHandle(pointer: context)
        }
        defer { release(handle, to: macs, free: EVP_MAC_CTX_free) }
        return try body(handle.pointer)
    }

    private func release(
        _ handle: ContextHandle, to pool: borrowing Locked<[ContextHandle]>, free: (OpaquePointer) -> Void
    ) {
        let kept = pool.withLock { idle in
            guard idle.count < Self.poolLimit else { return false }
            idle.append(handle)
            return true
        }
        if !kept { free(handle.pointer) }
    }
}
