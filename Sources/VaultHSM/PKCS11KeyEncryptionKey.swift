import CPKCS11
public import VaultCrypto

/// The master key held by a PKCS#11 token (an HSM) that never lets it out: an AES-256 key generated on the token
/// as sensitive and not extractable, used for AES-GCM wraps and an AES-CMAC check value and nothing else.
///
/// Wrapped keys have the layout of every ``KeyEncryptionKey``, `nonce (12) || ciphertext || tag (16)` with the
/// label as authenticated data; nonces come from ``RandomPool``. A box that does not open throws ``CryptoError``
/// `.authenticationFailed` as under every custody; a failure of the token or the module throws ``HSMError``.
/// Calls are serialized on one session. Let the value go before the process exits: its last use finalizes the
/// module.
public final class PKCS11KeyEncryptionKey: KeyEncryptionKey {
    /// The label of the token that holds the key.
    public let tokenLabel: String
    /// The key's CKA_LABEL.
    public let keyLabel: String
    private let session: PKCS11Session
    private let keyHandle: CK_OBJECT_HANDLE

    /// The message whose AES-CMAC is the check value (16 bytes, one block).
    static let checkMessage = Array("cardvault kek v1".utf8)

    private init(session: PKCS11Session, keyHandle: CK_OBJECT_HANDLE, keyLabel: String) {
        self.session = session
        self.keyHandle = keyHandle
        self.tokenLabel = session.tokenLabel
        self.keyLabel = keyLabel
    }

    /// Uses the AES key labelled `keyLabel` on the token labelled `tokenLabel` of the module at `modulePath`.
    /// - Parameter pin: the token's user PIN; it goes to C_Login and nowhere else.
    /// - Throws: ``HSMError``: `.moduleUnavailable`, `.tokenNotFound`, `.pinIncorrect`, `.keyNotFound` …
    public static func open(
        modulePath: String, tokenLabel: String, keyLabel: String, pin: SecureBytes
    ) throws -> PKCS11KeyEncryptionKey {
        let label = try labelBytes(keyLabel)
        let session = try PKCS11Session.open(modulePath: modulePath, tokenLabel: tokenLabel, readWrite: false)
        try session.login(pin: pin)
        guard let key = try findKey(label, in: session) else {
            throw HSMError(.keyNotFound, "token '\(tokenLabel)' holds no AES key labelled '\(keyLabel)'")
        }
        return PKCS11KeyEncryptionKey(session: session, keyHandle: key, keyLabel: keyLabel)
    }

    /// Generates a new AES-256 key labelled `keyLabel` on the token and uses it; the token keeps it (CKA_TOKEN),
    /// only for a logged-in user (CKA_PRIVATE), sensitive and not extractable.
    /// - Throws: ``HSMError`` `.keyExists` when the token holds a key with that label already, and the errors
    ///   of ``open(modulePath:tokenLabel:keyLabel:pin:)``.
    public static func generate(
        modulePath: String, tokenLabel: String, keyLabel: String, pin: SecureBytes
    ) throws -> PKCS11KeyEncryptionKey {
        let label = try labelBytes(keyLabel)
        let session = try PKCS11Session.open(modulePath: modulePath, tokenLabel: tokenLabel, readWrite: true)
        try session.login(pin: pin)
        guard try findKey(label, in: session) == nil else {
            throw HSMError(.keyExists, "token '\(tokenLabel)' holds a key labelled '\(keyLabel)' already")
        }
        var key: CK_OBJECT_HANDLE = 0
        let rv = try session.perform { module, handle in
            cv_p11_generate_aes_key(module, handle, label, label.count, &key)
        }
        guard rv == CKR_OK else { throw HSMError.failed("C_GenerateKey", rv) }
        return PKCS11KeyEncryptionKey(session: session, keyHandle: key, keyLabel: keyLabel)
    }

    public func wrap(_ key: SymmetricKey, label: [UInt8]) throws -> [UInt8] {
        try Self.requireLabel(label)
        let sealedCount = key.byteCount + AESGCM.tagSize
        return try [UInt8](unsafeUninitializedCapacity: AESGCM.nonceSize + sealedCount) { output, initialized in
            let nonce = UnsafeMutableRawBufferPointer(
                rebasing: UnsafeMutableRawBufferPointer(output)[..<AESGCM.nonceSize])
            RandomPool.shared.fill(nonce)
            var written = sealedCount
            let rv = try key.withUnsafeBytes { plain in
                try session.perform { module, handle in
                    cv_p11_gcm_encrypt(
                        module, handle, keyHandle, output.baseAddress, label, label.count, bytes(plain), plain.count,
                        output.baseAddress! + AESGCM.nonceSize, &written)
                }
            }
            guard rv == CKR_OK else { throw HSMError.failed("C_Encrypt (AES-GCM)", rv) }
            guard written == sealedCount else {
                throw HSMError(.operationFailed, "C_Encrypt (AES-GCM) gave \(written) bytes, not \(sealedCount)")
            }
            initialized = output.count
        }
    }

    /// - Throws: ``CryptoError`` `.authenticationFailed` when the box, the key or the label do not match,
    ///   `.malformedSealedBox` when it is shorter than a nonce and a tag; ``HSMError`` when the token fails.
    public func unwrap(_ sealed: [UInt8], label: [UInt8]) throws -> SymmetricKey {
        try Self.requireLabel(label)
        guard sealed.count >= AESGCM.overhead else {
            throw CryptoError(.malformedSealedBox, "sealed key shorter than nonce and tag")
        }
        let body = sealed.count - AESGCM.nonceSize
        var plainCount = body
        // Room for the tag too: SoftHSM 2.6.1 asks for the length of ciphertext and tag, and a call it refuses
        // for want of room leaves the operation active on the session.
        let output = try SecureBytes(count: body) { output in
            let rv = try sealed.withUnsafeBufferPointer { box in
                try session.perform { module, handle in
                    cv_p11_gcm_decrypt(
                        module, handle, keyHandle, box.baseAddress, label, label.count,
                        box.baseAddress! + AESGCM.nonceSize, body,
                        output.baseAddress?.assumingMemoryBound(to: UInt8.self),
                        &plainCount)
                }
            }
            try checkDecryption(rv)
        }
        guard plainCount == body - AESGCM.tagSize else {
            throw HSMError(
                .operationFailed, "C_Decrypt (AES-GCM) gave \(plainCount) bytes, not \(body - AESGCM.tagSize)")
        }
        return SymmetricKey(
            SecureBytes(count: plainCount) { plain in
                output.withUnsafeBytes { plain.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[..<plainCount])) }
            })
    }

    /// The AES-CMAC of "cardvault kek v1" under the key (16 bytes).
    public func checkValue() throws -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: 16)
        let rv = try session.perform { module, handle in
            cv_p11_cmac(module, handle, keyHandle, Self.checkMessage, Self.checkMessage.count, &mac)
        }
        guard rv == CKR_OK else { throw HSMError.failed("C_Sign (AES-CMAC)", rv) }
        return mac
    }

    /// What the token says about the key's protection; `valueAnswer` is its answer to a read of CKA_VALUE.
    func protection() throws -> (sensitive: Bool, extractable: Bool, valueAnswer: String) {
        var sensitive: Int32 = 0
        var extractable: Int32 = 1
        var valueRV: CK_RV = 0
        let rv = try session.perform { module, handle in
            cv_p11_key_protection(module, handle, keyHandle, &sensitive, &extractable, &valueRV)
        }
        guard rv == CKR_OK else { throw HSMError.failed("C_GetAttributeValue", rv) }
        return (sensitive != 0, extractable != 0, returnValueName(valueRV))
    }

    /// Maps C_Decrypt's answer: a box that does not authenticate is a ``CryptoError``, anything else an
    /// ``HSMError``. SoftHSM 2.6.1 answers a wrong tag with CKR_GENERAL_ERROR; the standard says
    /// CKR_ENCRYPTED_DATA_INVALID.
    private func checkDecryption(_ rv: CK_RV) throws {
        switch rv {
        case CKR_OK:
            return
        case CKR_ENCRYPTED_DATA_INVALID, CKR_ENCRYPTED_DATA_LEN_RANGE, CKR_GENERAL_ERROR:
            throw CryptoError(
                .authenticationFailed,
                "the sealed key does not open under HSM key '\(keyLabel)' (C_Decrypt: \(returnValueName(rv)))")
        default:
            throw HSMError.failed("C_Decrypt (AES-GCM)", rv)
        }
    }

    private static func findKey(_ label: [UInt8], in session: PKCS11Session) throws -> CK_OBJECT_HANDLE? {
        var key: CK_OBJECT_HANDLE = 0
        var matches = 0
        let rv = try session.perform { module, handle in
            cv_p11_find_aes_key(module, handle, label, label.count, &key, &matches)
        }
        guard rv == CKR_OK else { throw HSMError.failed("C_FindObjects", rv) }
        guard matches <= 1 else {
            throw HSMError(
                .ambiguous,
                "token '\(session.tokenLabel)' holds more than one AES key labelled '\(String(decoding: label, as: UTF8.self))'"
            )
        }
        return matches == 1 ? key : nil
    }

    private static func labelBytes(_ label: String) throws -> [UInt8] {
        guard !label.isEmpty else { throw HSMError(.invalidArgument, "the key label must not be empty") }
        return Array(label.utf8)
    }

    /// GCM with empty authenticated data crashes SoftHSM 2.6.1; CardVault's labels are never empty.
    private static func requireLabel(_ label: [UInt8]) throws {
        guard !label.isEmpty else {
            throw HSMError(.invalidArgument, "a wrapped key's label (its authenticated data) must not be empty")
        }
    }
}

/// The first byte of `buffer` as the shim's `const uint8_t *`.
private func bytes(_ buffer: UnsafeRawBufferPointer) -> UnsafePointer<UInt8>? {
    buffer.baseAddress?.assumingMemoryBound(to: UInt8.self)
}
