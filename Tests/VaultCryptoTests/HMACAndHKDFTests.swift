import Foundation
import Testing

@testable import VaultCrypto

struct HMACVector: Decodable, Sendable, CustomTestStringConvertible {
    var name, key, data, mac: String
    var testDescription: String { "RFC 4231 case \(name)" }
}

struct HKDFVector: Decodable, Sendable, CustomTestStringConvertible {
    var name, ikm, salt, info, okm: String
    var length: Int
    var testDescription: String { "RFC 5869 \(name)" }
}

@Suite struct HMACAndHKDFTests {
    static let hmacVectors = (try? VectorFile.load("hmac-sha256-rfc4231", as: HMACVector.self)) ?? []
    static let hkdfVectors = (try? VectorFile.load("hkdf-sha256-rfc5869", as: HKDFVector.self)) ?? []

    @Test func vectorFilesAreComplete() {
        #expect(Self.hmacVectors.count == 7)
        #expect(Self.hkdfVectors.count == 3)
    }

    @Test(arguments: hmacVectors)
    func hmacMatchesRFC4231(_ vector: HMACVector) {
        let key = SymmetricKey(copying: [UInt8](hex: vector.key))
        let mac = HMACSHA256.authenticationCode(for: [UInt8](hex: vector.data), using: key)
        #expect(mac.hex.hasPrefix(vector.mac))
        #expect(mac.count == 32)
    }

    @Test func hmacVerificationIsExact() {
        let key = SymmetricKey.random()
        let message = Array("fingerprint".utf8)
        var mac = HMACSHA256.authenticationCode(for: message, using: key)
        #expect(HMACSHA256.isValid(mac, authenticating: message, using: key))
        mac[0] ^= 1
        #expect(!HMACSHA256.isValid(mac, authenticating: message, using: key))
        #expect(!HMACSHA256.isValid(Array(mac.prefix(16)), authenticating: message, using: key))
    }

    @Test func hmacOfEmptyMessageAndEmptyKey() {
        // Python's hmac.new(b"", b"", sha256): a fixed published value.
        let mac = HMACSHA256.authenticationCode(for: [UInt8](), using: SymmetricKey(copying: [UInt8]()))
        #expect(mac.hex == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    }

    @Test(arguments: hkdfVectors)
    func hkdfMatchesRFC5869(_ vector: HKDFVector) throws {
        let key = try HKDF.deriveKey(
            inputKeyMaterial: SymmetricKey(copying: [UInt8](hex: vector.ikm)),
            salt: [UInt8](hex: vector.salt), info: [UInt8](hex: vector.info), outputByteCount: vector.length)
        #expect(key.withUnsafeBytes { Array($0) }.hex == vector.okm)
    }

    @Test func hkdfRejectsImpossibleLengths() {
        #expect(throws: CryptoError(.invalidLength, "")) {
            try HKDF.deriveKey(inputKeyMaterial: SymmetricKey.random(), outputByteCount: 0)
        }
        #expect(throws: CryptoError(.invalidLength, "")) {
            try HKDF.deriveKey(inputKeyMaterial: SymmetricKey.random(), outputByteCount: 255 * 32 + 1)
        }
    }
}
