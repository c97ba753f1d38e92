import Foundation
import Testing

@testable import VaultCrypto

struct GCMVector: Decodable, CustomTestStringConvertible, Sendable {
    var name, key, iv, plaintext, aad, ciphertext, tag: String
    var testDescription: String { "GCM test case \(name)" }
}

@Suite struct AESGCMTests {
    static let vectors = (try? VectorFile.load("aes-256-gcm-mcgrew-viega", as: GCMVector.self)) ?? []

    @Test func vectorFileIsComplete() {
        #expect(Self.vectors.map(\.name) == ["13", "14", "15", "16", "17", "18"])
    }

    @Test(arguments: vectors)
    func sealMatchesPublishedVector(_ vector: GCMVector) throws {
        let key = SymmetricKey(copying: [UInt8](hex: vector.key))
        let plaintext = [UInt8](hex: vector.plaintext)
        let iv = [UInt8](hex: vector.iv)
        let aad = [UInt8](hex: vector.aad)
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
        var tag = [UInt8](repeating: 0, count: 16)
        try plaintext.withUnsafeBytes { plain in
            try iv.withUnsafeBytes { nonce in
                try aad.withUnsafeBytes { aadBytes in
                    try ciphertext.withUnsafeMutableBytes { out in
                        try tag.withUnsafeMutableBytes { tagOut in
                            try AESGCM.sealDetached(
                                plain, key: key, nonce: nonce, aad: aadBytes, ciphertext: out, tag: tagOut)
                        }
                    }
                }
            }
        }
        #expect(ciphertext.hex == vector.ciphertext)
        #expect(tag.hex == vector.tag)
    }

    @Test(arguments: vectors)
    func openMatchesPublishedVectorAndRejectsAFlippedTag(_ vector: GCMVector) throws {
        let key = SymmetricKey(copying: [UInt8](hex: vector.key))
        let ciphertext = [UInt8](hex: vector.ciphertext)
        let iv = [UInt8](hex: vector.iv)
        let aad = [UInt8](hex: vector.aad)
        func open(tag: [UInt8]) throws -> [UInt8] {
            var plain = [UInt8](repeating: 0xEE, count: ciphertext.count)
            try ciphertext.withUnsafeBytes { c in
                try iv.withUnsafeBytes { nonce in
                    try aad.withUnsafeBytes { a in
                        try tag.withUnsafeBytes { t in
                            try plain.withUnsafeMutableBytes { out in
                                try AESGCM.openDetached(c, key: key, nonce: nonce, aad: a, tag: t, plaintext: out)
                            }
                        }
                    }
                }
            }
            return plain
        }
        #expect(try open(tag: [UInt8](hex: vector.tag)).hex == vector.plaintext)
        var bad = [UInt8](hex: vector.tag)
        bad[15] ^= 1
        #expect(throws: CryptoError(.authenticationFailed, "")) { try open(tag: bad) }
    }

    @Test func combinedBoxRoundTripsAndBindsAAD() throws {
        let key = SymmetricKey.random()
        let message = Array("card record 4970107111111119".utf8)
        let box = try AESGCM.seal(message, using: key, authenticating: Array("cards/c1/v1".utf8))
        #expect(box.count == message.count + AESGCM.overhead)
        let opened = try AESGCM.open(box, using: key, authenticating: Array("cards/c1/v1".utf8))
        #expect(opened.withUnsafeBytes { Array($0) } == message)
        #expect(throws: CryptoError(.authenticationFailed, "")) {
            try AESGCM.open(box, using: key, authenticating: Array("cards/c2/v1".utf8))
        }
        #expect(throws: CryptoError(.authenticationFailed, "")) {
            try AESGCM.open(box, using: SymmetricKey.random(), authenticating: Array("cards/c1/v1".utf8))
        }
    }

    @Test func everyFlippedByteFailsAuthentication() throws {
        let key = SymmetricKey.random()
        let box = try AESGCM.seal(Array("0123456789".utf8), using: key)
        for index in box.indices {
            var tampered = box
            tampered[index] ^= 0x40
            #expect(throws: CryptoError(.authenticationFailed, "")) { try AESGCM.open(tampered, using: key) }
        }
    }

    @Test func failedOpenWipesTheOutputBuffer() throws {
        let key = SymmetricKey.random()
        var box = try AESGCM.seal([UInt8](repeating: 0x41, count: 64), using: key)
        box[box.count - 1] ^= 1
        var output = [UInt8](repeating: 0xEE, count: 64)
        #expect(throws: CryptoError.self) {
            try box.withUnsafeBytes { whole in
                try output.withUnsafeMutableBytes { out in
                    try AESGCM.openDetached(
                        UnsafeRawBufferPointer(rebasing: whole[12..<76]), key: key,
                        nonce: UnsafeRawBufferPointer(rebasing: whole[0..<12]),
                        aad: UnsafeRawBufferPointer(start: nil, count: 0),
                        tag: UnsafeRawBufferPointer(rebasing: whole[76...]), plaintext: out)
                }
            }
        }
        #expect(output.allSatisfy { $0 == 0 })
    }

    @Test func wrongSizesAreTypedErrors() throws {
        #expect(throws: CryptoError(.invalidKeySize, "")) {
            try AESGCM.seal([UInt8](), using: SymmetricKey(copying: [UInt8](repeating: 1, count: 16)))
        }
        #expect(throws: CryptoError(.malformedSealedBox, "")) {
            try AESGCM.open([UInt8](repeating: 0, count: 27), using: SymmetricKey.random())
        }
    }

    @Test func noncesAreFreshForEverySeal() throws {
        let key = SymmetricKey.random()
        var nonces = Set<[UInt8]>()
        for _ in 0..<2000 {
            let box = try AESGCM.seal([UInt8](), using: key)
            nonces.insert(Array(box[0..<12]))
        }
        #expect(nonces.count == 2000)
    }
}

@Suite struct KeyContextReuseTests {
    @Test func oneKeyServesManyNonceLengthsAndThreads() async throws {
        let key = SymmetricKey.random()
        let macKey = SymmetricKey.random()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for round in 0..<200 {
                        let message = Array("task \(task) round \(round)".utf8)
                        let box = try AESGCM.seal(message, using: key, authenticating: [UInt8(task)])
                        #expect(
                            try AESGCM.open(box, using: key, authenticating: [UInt8(task)]).withUnsafeBytes {
                                Array($0)
                            } == message)
                        var tampered = box
                        tampered[tampered.count - 1] ^= 1
                        #expect(throws: CryptoError.self) {
                            try AESGCM.open(tampered, using: key, authenticating: [UInt8(task)])
                        }
                        #expect(
                            HMACSHA256.authenticationCode(for: message, using: macKey)
                                == HMACSHA256.authenticationCode(
                                    for: message, using: SymmetricKey(copying: macKey.withUnsafeBytes { Array($0) })))
                    }
                }
            }
            try await group.waitForAll()
        }
        // A pooled context that served a 12-byte nonce still answers the 8-byte published vector.
        let vector = try #require(AESGCMTests.vectors.first { $0.name == "17" })
        let vectorKey = SymmetricKey(copying: [UInt8](hex: vector.key))
        _ = try AESGCM.seal([UInt8](repeating: 1, count: 32), using: vectorKey)
        let plaintext = [UInt8](hex: vector.plaintext)
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
        var tag = [UInt8](repeating: 0, count: 16)
        try plaintext.withUnsafeBytes { plain in
            try [UInt8](hex: vector.iv).withUnsafeBytes { nonce in
                try [UInt8](hex: vector.aad).withUnsafeBytes { aad in
                    try ciphertext.withUnsafeMutableBytes { out in
                        try tag.withUnsafeMutableBytes { t in
                            try AESGCM.sealDetached(
                                plain, key: vectorKey, nonce: nonce, aad: aad, ciphertext: out, tag: t)
                        }
                    }
                }
            }
        }
        #expect(ciphertext.hex == vector.ciphertext)
        #expect(tag.hex == vector.tag)
        _ = try AESGCM.seal([UInt8](repeating: 1, count: 32), using: vectorKey)
    }
}
