import Foundation
import Testing
import VaultCore

@testable import VaultCrypto

@Suite struct KeySharesTests {
    /// FIPS-197 section 4.2: {57} • {83} = {c1}; {53} and {ca} are inverses (section 5.1.1's S-box example).
    @Test func fieldArithmeticMatchesTheAESField() {
        #expect(KeyShares.multiply(0x57, 0x83) == 0xc1)
        #expect(KeyShares.multiply(0x53, 0xca) == 0x01)
        #expect(KeyShares.inverse(0x53) == 0xca)
        for value in 1...255 {
            #expect(KeyShares.multiply(UInt8(value), KeyShares.inverse(UInt8(value))) == 1)
        }
        #expect(KeyShares.inverse(0) == 0)
    }

    private static func secret() -> SecureBytes { SecureBytes(count: 32) { RandomPool.shared.fill($0) } }

    private static func bytes(_ value: SecureBytes) -> [UInt8] { value.withUnsafeBytes { Array($0) } }

    /// Every subset of `size` of `0..<count`.
    private static func subsets(_ count: Int, _ size: Int) -> [[Int]] {
        guard size > 0 else { return [[]] }
        guard count >= size else { return [] }
        return subsets(count - 1, size) + subsets(count - 1, size - 1).map { $0 + [count - 1] }
    }

    @Test(arguments: [(2, 2), (2, 3), (3, 5), (5, 5), (4, 16)])
    func anyThresholdOfTheSharesRebuildsTheSecretAndFewerDoNot(threshold: Int, count: Int) {
        let secret = Self.secret()
        let shares = KeyShares.split(secret, threshold: threshold, count: count)
        #expect(shares.map(\.index) == (1...count).map { UInt8($0) })
        #expect(shares.allSatisfy { $0.bytes.count == 32 && $0.threshold == threshold })
        for subset in Self.subsets(count, threshold).prefix(40) {
            #expect(Self.bytes(KeyShares.combine(subset.map { shares[$0] })) == Self.bytes(secret))
        }
        for subset in Self.subsets(count, threshold - 1).prefix(20) where !subset.isEmpty {
            #expect(Self.bytes(KeyShares.combine(subset.map { shares[$0] })) != Self.bytes(secret))
        }
    }

    @Test func twoSplitsOfOneSecretShareNothing() {
        let secret = Self.secret()
        let first = KeyShares.split(secret, threshold: 2, count: 3)
        let second = KeyShares.split(secret, threshold: 2, count: 3)
        #expect(Self.bytes(first[0].bytes) != Self.bytes(second[0].bytes))
        // Mixing sets rebuilds garbage.
        #expect(Self.bytes(KeyShares.combine([first[0], second[1]])) != Self.bytes(secret))
    }

    /// AES-256 of the zero block under the zero key is dc95c078a2408989ad48a21492842087 (FIPS-197 style vector).
    @Test func keyCheckValueIsThreeBytesOfAESOfTheZeroBlock() {
        #expect(KeyCheckValue.hex(of: SecureBytes(count: 32)) == "dc95c0")
    }

    @Test func shareTextRoundTripsAndNamesTheIndexOfAMistypedShare() throws {
        let shares = KeyShares.split(Self.secret(), threshold: 2, count: 3)
        let line = ShareText.encode(shares[1])
        #expect(line.hasPrefix("cvs1-2-2-") && line.count == 9 + 64 + 1 + 6)
        let parsed = try ShareText.parse("  " + line.uppercased().replacingOccurrences(of: "CVS1", with: "cvs1") + "\n")
        #expect(parsed.index == 2 && parsed.threshold == 2 && Self.bytes(parsed.bytes) == Self.bytes(shares[1].bytes))
        var typo = Array(line)
        typo[12] = typo[12] == "0" ? "1" : "0"
        #expect(throws: KeyRingError(.checkValue, "")) { try ShareText.parse(String(typo)) }
        do {
            _ = try ShareText.parse(String(typo))
        } catch {
            #expect(error.message.contains("share 2"))
            #expect(!error.message.contains(String(line.dropFirst(9).prefix(64))))
        }
        for bad in [
            "", "cvs1", "cvs2-2-1-" + String(repeating: "0", count: 64) + "-000000",
            "cvs1-1-1-" + String(repeating: "0", count: 64) + "-000000",
            "cvs1-2-0-" + String(repeating: "0", count: 64) + "-000000",
            "cvs1-2-1-" + String(repeating: "0", count: 63) + "-000000",
            "cvs1-2-1-" + String(repeating: "g", count: 64) + "-000000",
        ] {
            #expect(throws: KeyRingError.self) { try ShareText.parse(bad) }
        }
    }

    @Test func progressCountsDistinctSharesOfOneSplitAndExpires() throws {
        let secret = Self.secret()
        let shares = KeyShares.split(secret, threshold: 3, count: 5)
        var progress = UnsealProgress()
        let start = Date(timeIntervalSince1970: 1_000_000)
        #expect(try progress.add(shares[0], now: start) == nil)
        #expect(throws: KeyRingError(.repeatedIndex, "")) { try progress.add(shares[0], now: start) }
        let other = KeyShares.split(secret, threshold: 2, count: 2)
        #expect(throws: KeyRingError(.thresholdMismatch, "")) { try progress.add(other[1], now: start) }
        #expect(progress.count == 1 && progress.threshold == 3)
        #expect(try progress.add(shares[3], now: start.addingTimeInterval(599)) == nil)
        // Ten minutes after the last share the progress is gone.
        let expired = progress.expire(now: start.addingTimeInterval(599 + UnsealProgress.timeout))
        #expect(expired)
        #expect(progress.count == 0 && progress.threshold == nil)
        let later = start.addingTimeInterval(2_000)
        #expect(try progress.add(shares[4], now: later) == nil)
        #expect(try progress.add(shares[2], now: later) == nil)
        let rebuilt = try #require(try progress.add(shares[0], now: later))
        #expect(Self.bytes(rebuilt) == Self.bytes(secret))
        #expect(progress.count == 0)  // cleared once complete
    }

    @Test func theCustodyRecordOpensTheMasterKeyOnlyWithItsUnsealKey() throws {
        let master = Self.secret()
        let split = try MasterKeySplit(master: master, threshold: 2, count: 3)
        #expect(split.custody.masterCheckValue == KeyCheckValue.hex(of: master))
        let unsealKey = KeyShares.combine([split.shares[2], split.shares[0]])
        #expect(Self.bytes(try split.custody.openMaster(with: unsealKey)) == Self.bytes(master))
        #expect(Self.bytes(unsealKey) != Self.bytes(master))
        let rekeyed = try MasterKeySplit(master: master, threshold: 2, count: 3)
        #expect(rekeyed.custody.masterCheckValue == split.custody.masterCheckValue)
        #expect(throws: KeyRingError(.wrongKey, "")) { try rekeyed.custody.openMaster(with: unsealKey) }
        let encoded = try rekeyed.custody.encoded()
        #expect(try KeyCustody.decode(encoded, source: "test") == rekeyed.custody)
    }

    /// Keyrings written before custody existed stay readable: the memory custody's check is the same HMAC.
    @Test func memoryCustodyKeepsTheKeyringCheckValue() throws {
        let key = SymmetricKey.random()
        let expected = Array(
            HMACSHA256.authenticationCode(for: Array("cardvault master key check v1".utf8), using: key).prefix(16))
        #expect(try MemoryKeyEncryptionKey(key).checkValue() == expected)
        let data = SymmetricKey.random()
        let kek = MemoryKeyEncryptionKey(key)
        let sealed = try kek.wrap(data, label: Array("label".utf8))
        let opened = try kek.unwrap(sealed, label: Array("label".utf8))
        #expect(opened.withUnsafeBytes { Array($0) } == data.withUnsafeBytes { Array($0) })
        #expect(throws: (any Error).self) { try kek.unwrap(sealed, label: Array("other".utf8)) }
    }
}
