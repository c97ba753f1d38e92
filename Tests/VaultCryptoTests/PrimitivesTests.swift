import Foundation
import Testing
import VaultCore

@testable import VaultCrypto

@Suite struct PrimitivesTests {
    @Test func constantTimeEqualityComparesContentAndLength() {
        #expect(ConstantTime.equals([1, 2, 3] as [UInt8], [1, 2, 3] as [UInt8]))
        #expect(!ConstantTime.equals([1, 2, 3] as [UInt8], [1, 2, 4] as [UInt8]))
        #expect(!ConstantTime.equals([1, 2, 3] as [UInt8], [1, 2] as [UInt8]))
        #expect(ConstantTime.equals([UInt8](), [UInt8]()))
    }

    @Test func keysNeverPrint() {
        let key = SymmetricKey(copying: Array("super-secret-key-material-012345".utf8))
        #expect("\(key)" == "[REDACTED]")
        #expect(String(reflecting: key) == "[REDACTED]")
        #expect(!"\(SecureBytes(copying: Array("secret".utf8)))".contains("secret"))
    }

    @Test func secureBytesCopiesAndExposesItsContent() {
        let bytes = SecureBytes(copying: [9, 8, 7] as [UInt8])
        #expect(bytes.count == 3)
        #expect(bytes.withUnsafeBytes { Array($0) } == [9, 8, 7])
        #expect(SecureBytes(count: 0).withUnsafeBytes { $0.count } == 0)
    }

    @Test func randomPoolNeverRepeatsAcrossRefillsAndThreads() async {
        let pool = RandomPool(refillSize: 256)
        let values = await withTaskGroup(of: [UInt64].self) { group in
            for _ in 0..<4 {
                group.addTask { (0..<2000).map { _ in pool.next() } }
            }
            var all: [UInt64] = []
            for await chunk in group { all += chunk }
            return all
        }
        #expect(values.count == 8000)
        #expect(Set(values).count == 8000)
    }

    /// Eight threads on one pool of a single chunk: draws that find the chunk busy go to OpenSSL, and still no
    /// value comes out twice.
    @Test func randomPoolNeverRepeatsWhenItsChunksAreBusy() {
        for chunkLimit in [1, 4] {
            let pool = RandomPool(refillSize: 128, chunkLimit: chunkLimit)
            let values = Locked<[UInt64]>([])
            let finished = Locked(0)
            for _ in 0..<8 {
                Thread {
                    let drawn = (0..<5000).map { _ in pool.next() }
                    values.withLock { $0 += drawn }
                    finished.withLock { $0 += 1 }
                }.start()
            }
            while finished.withLock({ $0 }) < 8 { usleep(1000) }
            let all = values.withLock { $0 }
            #expect(all.count == 40_000)
            #expect(Set(all).count == 40_000)
        }
    }

    @Test func randomPoolServesLargeRequestsDirectly() {
        let pool = RandomPool(refillSize: 64)
        let bytes = pool.bytes(count: 1000)
        #expect(bytes.count == 1000)
        // 1000 random bytes are not all equal (probability 256^-999).
        #expect(Set(bytes).count > 1)
    }
}

@Suite struct FingerprintKeyTests {
    @Test func eachClientGetsItsOwnStableKey() throws {
        let secret = SymmetricKey.random()
        let keys = DerivedFingerprintKeys(secret: secret)
        let pan = Array("4970107111111119".utf8)
        let a1 = HMACSHA256.authenticationCode(for: pan, using: try keys.fingerprintKey(forClient: "client-a"))
        let a2 = HMACSHA256.authenticationCode(for: pan, using: try keys.fingerprintKey(forClient: "client-a"))
        let b = HMACSHA256.authenticationCode(for: pan, using: try keys.fingerprintKey(forClient: "client-b"))
        let aOtherSecret = HMACSHA256.authenticationCode(
            for: pan,
            using: try DerivedFingerprintKeys(secret: SymmetricKey.random()).fingerprintKey(forClient: "client-a"))
        #expect(a1 == a2)
        #expect(a1 != b)
        #expect(a1 != aOtherSecret)
        // Same derivation as HKDF directly: the cache does not change the result.
        let direct = try HKDF.deriveKey(
            inputKeyMaterial: secret, salt: Array("cardvault fingerprint key v1".utf8), info: Array("client-a".utf8))
        #expect(HMACSHA256.authenticationCode(for: pan, using: direct) == a1)
    }
}
