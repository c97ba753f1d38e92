import COpenSSL
import VaultCore

/// OpenSSL contexts already set up with one key, kept for reuse so that a seal, an open or a MAC pays
/// neither the algorithm fetch nor the key schedule again.
///
/// AES-GCM contexts keep their expanded key between operations (each operation only sets a new IV);
/// HMAC contexts keep their keyed state (`EVP_MAC_init` with a null key reuses it). Contexts are not
/// thread-safe, so each operation takes one from a set of idle ones (``IdleSlots``, lock-free) and puts
/// it back; when none is idle a new one is made, and one that finds no free slot is freed. Everything
/// is freed (and the key state cleansed by OpenSSL) in `deinit`.
final class KeyContexts: Sendable {
    private let sealers = IdleSlots()
    private let openers = IdleSlots()
    private let macs = IdleSlots()
    private let algorithms = Locked<Algorithms?>(nil)

    /// The fetched algorithm objects, shared by all contexts of this key.
    /// Unchecked Sendable: fetched `EVP_CIPHER`/`EVP_MAC` objects are immutable and thread-safe in OpenSSL 3.
    private struct Algorithms: @unchecked Sendable {
        let cipher: OpaquePointer
        let mac: OpaquePointer
    }

    init() {}

    deinit {
        sealers.drain { EVP_CIPHER_CTX_free(OpaquePointer($0)) }
        openers.drain { EVP_CIPHER_CTX_free(OpaquePointer($0)) }
        macs.drain { EVP_MAC_CTX_free(OpaquePointer($0)) }
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
        let idleSet = encrypting ? sealers : openers
        let context: OpaquePointer
        if pooled, let idle = idleSet.take() {
            context = OpaquePointer(idle)
        } else {
            context = try makeCipher(encrypting: encrypting, key: key)
        }
        defer {
            if !pooled || !idleSet.put(UnsafeMutableRawPointer(context)) { EVP_CIPHER_CTX_free(context) }
        }
        return try body(context)
    }

    private func makeCipher(encrypting: Bool, key: SymmetricKey) throws -> OpaquePointer {
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
        return context
    }

    /// Runs `body` with an HMAC-SHA256 context keyed with `key` and ready for `EVP_MAC_update`.
    func withMAC<Result>(key: SymmetricKey, _ body: (OpaquePointer) throws -> Result) throws -> Result {
        let context: OpaquePointer
        if let idle = macs.take() {
            context = OpaquePointer(idle)
            guard EVP_MAC_init(context, nil, 0, nil) == 1 else {
                EVP_MAC_CTX_free(context)
                throw CryptoError(.openSSLFailure, "HMAC re-initialisation failed")
            }
        } else {
            context = try makeMAC(key: key)
        }
        defer {
            if !macs.put(UnsafeMutableRawPointer(context)) { EVP_MAC_CTX_free(context) }
        }
        return try body(context)
    }

    private func makeMAC(key: SymmetricKey) throws -> OpaquePointer {
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
        return context
    }
}
