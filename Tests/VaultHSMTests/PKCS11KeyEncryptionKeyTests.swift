import Foundation
import Testing
import VaultCrypto

@testable import VaultHSM

@Suite("PKCS#11 master key (SoftHSM2)", .serialized)
struct PKCS11KeyEncryptionKeyTests {
    let modulePath = SoftHSMFixture.modulePath
    let token = SoftHSMFixture.tokenLabel

    init() throws {
        _ = try SoftHSMFixture.shared.get()
    }

    func generate(_ name: String) throws -> PKCS11KeyEncryptionKey {
        try PKCS11KeyEncryptionKey.generate(
            modulePath: modulePath, tokenLabel: token, keyLabel: SoftHSMFixture.uniqueKeyLabel(name),
            pin: SoftHSMFixture.pin)
    }

    func open(
        _ keyLabel: String, token: String? = nil, pin: SecureBytes = SoftHSMFixture.pin
    ) throws
        -> PKCS11KeyEncryptionKey
    {
        try PKCS11KeyEncryptionKey.open(
            modulePath: modulePath, tokenLabel: token ?? self.token, keyLabel: keyLabel, pin: pin)
    }

    @Test func wrapsAndUnwrapsA32ByteKey() throws {
        let kek = try generate("round-trip")
        let dataKey = SymmetricKey.random()
        let label = Array("dek v1".utf8)
        let sealed = try kek.wrap(dataKey, label: label)
        #expect(sealed.count == AESGCM.nonceSize + 32 + AESGCM.tagSize)
        let opened = try kek.unwrap(sealed, label: label)
        #expect(opened.withUnsafeBytes { Array($0) } == dataKey.withUnsafeBytes { Array($0) })
        // A fresh nonce each time.
        #expect(try kek.wrap(dataKey, label: label) != sealed)
    }

    @Test func unwrapUnderAnotherLabelFails() throws {
        let kek = try generate("label")
        let sealed = try kek.wrap(SymmetricKey.random(), label: Array("dek v1".utf8))
        #expect(throws: CryptoError(.authenticationFailed, "")) {
            try kek.unwrap(sealed, label: Array("dek v2".utf8))
        }
    }

    @Test func tamperedOrShortBoxFails() throws {
        let kek = try generate("tamper")
        let label = Array("fingerprint".utf8)
        let sealed = try kek.wrap(SymmetricKey.random(), label: label)
        // The nonce, the ciphertext and the tag.
        for index in [0, AESGCM.nonceSize + 3, sealed.count - 1] {
            var tampered = sealed
            tampered[index] ^= 0x01
            #expect(throws: CryptoError(.authenticationFailed, "")) { try kek.unwrap(tampered, label: label) }
        }
        #expect(throws: CryptoError(.malformedSealedBox, "")) {
            try kek.unwrap(Array(sealed.prefix(AESGCM.overhead - 1)), label: label)
        }
        // The session is usable after the refusals.
        #expect(try kek.unwrap(sealed, label: label).byteCount == 32)
    }

    @Test func checkValueIsStableAcrossReopenAndDiffersPerKey() throws {
        let keyLabel = SoftHSMFixture.uniqueKeyLabel("check")
        let label = Array("dek v1".utf8)
        let (check, sealed) = try {
            let kek = try PKCS11KeyEncryptionKey.generate(
                modulePath: modulePath, tokenLabel: token, keyLabel: keyLabel, pin: SoftHSMFixture.pin)
            #expect(try kek.checkValue() == kek.checkValue())
            return (
                try kek.checkValue(),
                try kek.wrap(SymmetricKey(copying: [UInt8](repeating: 7, count: 32)), label: label)
            )
        }()
        #expect(check.count == 16)
        let reopened = try open(keyLabel)
        #expect(try reopened.checkValue() == check)
        #expect(
            try reopened.unwrap(sealed, label: label).withUnsafeBytes { Array($0) } == [UInt8](repeating: 7, count: 32))
        let other = try generate("check-other")
        #expect(try other.checkValue() != check)
        #expect(throws: CryptoError(.authenticationFailed, "")) { try other.unwrap(sealed, label: label) }
    }

    @Test func generatedKeyIsSensitiveAndNotExtractable() throws {
        let protection = try generate("extract").protection()
        #expect(protection.sensitive)
        #expect(!protection.extractable)
        #expect(protection.valueAnswer.hasPrefix("CKR_ATTRIBUTE_SENSITIVE"))
    }

    @Test func generateRefusesALabelInUse() throws {
        let kek = try generate("twice")
        #expect(throws: HSMError(.keyExists, "")) {
            try PKCS11KeyEncryptionKey.generate(
                modulePath: modulePath, tokenLabel: token, keyLabel: kek.keyLabel, pin: SoftHSMFixture.pin)
        }
    }

    @Test func openWithoutSuchKeyFails() throws {
        let error = try #require(throws: HSMError.self) { try open("no-such-key") }
        #expect(error.code == .keyNotFound)
        #expect(error.message.contains("no-such-key"))
        #expect(PKCS11Module.loadedCount == 0)
    }

    @Test func wrongPINIsReportedAsSuch() throws {
        let error = try #require(throws: HSMError.self) {
            try PKCS11KeyEncryptionKey.generate(
                modulePath: modulePath, tokenLabel: SoftHSMFixture.pinTokenLabel, keyLabel: "any",
                pin: SecureBytes(copying: Array("9876".utf8)))
        }
        #expect(error.code == .pinIncorrect)
        #expect(error.message.contains("CKR_PIN_INCORRECT"))
        #expect(!error.message.contains("9876"))
        #expect(PKCS11Module.loadedCount == 0)
    }

    @Test func missingTokenIsReportedAsSuch() throws {
        let error = try #require(throws: HSMError.self) { try open("any", token: "no-such-token") }
        #expect(error.code == .tokenNotFound)
        #expect(error.message.contains("no-such-token"))
        #expect(PKCS11Module.loadedCount == 0)
    }

    @Test func missingModuleIsReportedWithItsPath() throws {
        let path = "/nonexistent/libpkcs11-missing.so"
        let error = try #require(throws: HSMError.self) {
            try PKCS11KeyEncryptionKey.open(
                modulePath: path, tokenLabel: token, keyLabel: "any", pin: SoftHSMFixture.pin)
        }
        #expect(error.code == .moduleUnavailable)
        #expect(error.message.contains(path))
        #expect(throws: HSMError(.moduleUnavailable, "")) {
            try PKCS11KeyEncryptionKey.open(
                modulePath: "libsofthsm2.so", tokenLabel: token, keyLabel: "any", pin: SoftHSMFixture.pin)
        }
    }

    @Test func emptyLabelsAreRefusedBeforeTheToken() throws {
        let kek = try generate("empty")
        #expect(throws: HSMError(.invalidArgument, "")) { try kek.wrap(SymmetricKey.random(), label: []) }
        let sealed = try kek.wrap(SymmetricKey.random(), label: [1])
        #expect(throws: HSMError(.invalidArgument, "")) { try kek.unwrap(sealed, label: []) }
        #expect(throws: HSMError(.invalidArgument, "")) { try open("") }
    }

    @Test func twoUsersOfOneModuleAndConcurrentCalls() async throws {
        let first = try generate("shared")
        let second = try open(first.keyLabel)
        let label = Array("dek v1".utf8)
        let sealed = try first.wrap(SymmetricKey.random(), label: label)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<16 {
                let kek = index.isMultiple(of: 2) ? first : second
                group.addTask {
                    for _ in 0..<20 {
                        let key = SymmetricKey.random()
                        let opened = try kek.unwrap(kek.wrap(key, label: label), label: label)
                        #expect(opened.withUnsafeBytes { Array($0) } == key.withUnsafeBytes { Array($0) })
                        _ = try kek.unwrap(sealed, label: label)
                    }
                }
            }
            try await group.waitForAll()
        }
        // The second user's session stays logged in once the first is gone.
        let check = try first.checkValue()
        _ = consume first
        #expect(try second.checkValue() == check)
        #expect(try second.unwrap(sealed, label: label).byteCount == 32)
    }

    @Test func theLastUserFinalizesTheModule() throws {
        let keyLabel = try {
            let kek = try generate("finalize")
            #expect(PKCS11Module.loadedCount == 1)
            return kek.keyLabel
        }()
        #expect(PKCS11Module.loadedCount == 0)
        // Initialized again on the next use, with the key still on the token.
        let reopened = try open(keyLabel)
        #expect(PKCS11Module.loadedCount == 1)
        #expect(try reopened.checkValue().count == 16)
    }
}
