import Foundation
import Testing
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

    @Test func randomPoolServesLargeRequestsDirectly() {
        let pool = RandomPool(refillSize: 64)
        let bytes = pool.bytes(count: 1000)
        #expect(bytes.count == 1000)
        // 1000 random bytes are not all equal (probability 256^-999).
        #expect(Set(bytes).count > 1)
    }
}
