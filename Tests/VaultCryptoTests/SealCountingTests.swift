import Dispatch
import Foundation
import Testing
import VaultCore

@testable import VaultCrypto

#if canImport(Glibc)
import Glibc
#endif

/// Seal counting and automatic rotation of the keyring (``KeyRing/reserveSeals(_:)``).
@Suite struct SealCountingTests {
    typealias Directories = KeyRingTests.Directories

    private func ring(
        _ directories: Directories, clock: ManualClock = ManualClock(), seals: UInt64, block: UInt64,
        age: TimeInterval? = nil
    ) throws -> KeyRing {
        _ = try KeyRing.createMasterKey(keysDirectory: directories.keys)
        return try KeyRing.open(
            dataDirectory: directories.data, keysDirectory: directories.keys, clock: clock,
            policy: KeyRotationPolicy(maximumSeals: seals, maximumAge: age, reservationBlock: block))
    }

    /// What a crash at this moment would leave: the counts a fresh open reads from the file.
    private func persistedSeals(_ directories: Directories) throws -> [UInt32: UInt64] {
        let reopened = try KeyRing.open(dataDirectory: directories.data, keysDirectory: directories.keys)
        return Dictionary(uniqueKeysWithValues: reopened.dataKeys.map { ($0.version, $0.seals) })
    }

    @Test func rotatesExactlyAtTheSealLimitAndTheNewKeySealsTheRest() throws {
        let directories = try Directories()
        let ring = try ring(directories, seals: 10, block: 4)
        let first = ring.key(version: 1)!
        for _ in 0..<10 {
            let reservation = try ring.reserveSeals(1)
            #expect(reservation.version == 1)
            #expect(reservation.rotation == nil)
        }
        let eleventh = try ring.reserveSeals(1)
        #expect(eleventh.version == 2)
        #expect(eleventh.rotation?.reason == .seals)
        #expect(eleventh.rotation?.previous.version == 1)
        #expect(eleventh.rotation?.previous.seals == 10)
        #expect(eleventh.rotation?.next.version == 2)
        #expect(ring.currentVersion == 2)
        // A batch that does not fit in what is left goes whole to a new version.
        #expect(try ring.reserveSeals(8).version == 2)
        let batch = try ring.reserveSeals(3)
        #expect(batch.version == 3)
        #expect(batch.rotation?.previous.seals == 9)
        #expect(ring.dataKeys.map(\.seals) == [10, 9, 3])
        // The old version still decrypts: its key is unchanged.
        let sealed = try AESGCM.seal([7, 7] as [UInt8], using: first)
        #expect(try AESGCM.open(sealed, using: ring.key(version: 1)!).withUnsafeBytes { Array($0) } == [7, 7])
        #expect(throws: KeyRingError(.sealLimit, "")) { try ring.reserveSeals(11) }
        // Nothing was granted by the refusal.
        #expect(ring.dataKeys.map(\.seals) == [10, 9, 3])
    }

    @Test func theFileNeverHoldsFewerSealsThanGrantedSoACrashOnlyOvercounts() throws {
        let directories = try Directories()
        let ring = try ring(directories, seals: 1000, block: 16)
        var granted: UInt64 = 0
        for step in 0..<60 {
            let count = step % 7 + 1
            #expect(try ring.reserveSeals(count).version == 1)
            granted += UInt64(count)
            let persisted = try persistedSeals(directories)[1] ?? 0
            #expect(persisted >= granted, "after \(granted) seals the file says \(persisted)")
            // Bounded overcount: at most one block (or the last batch) ahead.
            #expect(persisted - granted < 16)
        }
        // Reopening (a restart or a crash: the ring keeps nothing else) counts every reserved seal.
        let persisted = try persistedSeals(directories)[1]!
        let reopened = try KeyRing.open(
            dataDirectory: directories.data, keysDirectory: directories.keys,
            policy: KeyRotationPolicy(maximumSeals: 1000, maximumAge: nil, reservationBlock: 16))
        #expect(reopened.dataKeys.map(\.seals) == [persisted])
        _ = try reopened.reserveSeals(1)
        #expect(reopened.dataKeys.map(\.seals) == [persisted + 1])
        #expect(try persistedSeals(directories)[1]! >= persisted + 1)
    }

    @Test func countsSurviveReopenAndTheLimitHoldsAcrossRestarts() throws {
        let directories = try Directories()
        var ring: KeyRing? = try ring(directories, seals: 20, block: 5)
        for _ in 0..<12 { _ = try ring!.reserveSeals(1) }
        ring = nil
        let policy = KeyRotationPolicy(maximumSeals: 20, maximumAge: nil, reservationBlock: 5)
        let reopened = try KeyRing.open(
            dataDirectory: directories.data, keysDirectory: directories.keys, policy: policy)
        // 12 used, 15 reserved: the restart counts 15.
        #expect(reopened.dataKeys.map(\.seals) == [15])
        for _ in 0..<5 { #expect(try reopened.reserveSeals(1).version == 1) }
        let next = try reopened.reserveSeals(1)
        #expect(next.version == 2)
        #expect(next.rotation?.previous.seals == 20)
        // Rotations by hand and master key rotations keep the counts.
        try reopened.rotateMaster()
        let again = try KeyRing.open(dataDirectory: directories.data, keysDirectory: directories.keys, policy: policy)
        #expect(again.dataKeys.map(\.seals) == [20, 5])
        try again.rotate()
        #expect(again.dataKeys.map(\.seals) == [20, 5, 0])
        // A clean close gives back what was reserved but not used.
        _ = try again.reserveSeals(2)
        #expect(try persistedSeals(directories) == [1: 20, 2: 5, 3: 5])
        try again.releaseUnusedSeals()
        #expect(try persistedSeals(directories) == [1: 20, 2: 5, 3: 2])
        _ = try again.reserveSeals(1)
        #expect(try persistedSeals(directories)[3]! >= 3)
    }

    @Test func rotatesOnAgeBeforeTheNextSealOnly() throws {
        let directories = try Directories()
        let clock = ManualClock()
        let ring = try ring(directories, clock: clock, seals: 1 << 30, block: 1 << 16, age: 90 * 86_400)
        #expect(try ring.reserveSeals(1).version == 1)
        clock.advance(by: 90 * 86_400 - 1)
        #expect(try ring.reserveSeals(1).version == 1)
        clock.advance(by: 1)
        // Asking for no seal changes nothing.
        #expect(try ring.reserveSeals(0).version == 1)
        let aged = try ring.reserveSeals(1)
        #expect(aged.version == 2)
        #expect(aged.rotation?.reason == .age)
        #expect(aged.rotation?.next.created == clock.now)
        clock.advance(by: 89 * 86_400)
        #expect(try ring.reserveSeals(1).version == 2)
        // The age survives a reopen (it is the version's creation time in the file).
        clock.advance(by: 86_400)
        let reopened = try KeyRing.open(
            dataDirectory: directories.data, keysDirectory: directories.keys, clock: clock,
            policy: KeyRotationPolicy(maximumSeals: 1 << 30, maximumAge: 90 * 86_400))
        #expect(try reopened.reserveSeals(1).rotation?.reason == .age)
        #expect(reopened.currentVersion == 3)
    }

    @Test func concurrentReservationsNeverPassTheLimitOfAVersion() throws {
        let directories = try Directories()
        let ring = try ring(directories, seals: 500, block: 64)
        let grants = Locked<[UInt32: UInt64]>([:])
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for index in 0..<500 {
                let count = (index + worker) % 3 + 1
                guard let reservation = try? ring.reserveSeals(count) else { continue }
                grants.withLock { $0[reservation.version, default: 0] += UInt64(count) }
            }
        }
        let granted = grants.withLock { $0 }
        let total = granted.values.reduce(0, +)
        var expected: UInt64 = 0
        for worker in 0..<8 {
            for index in 0..<500 { expected += UInt64((index + worker) % 3 + 1) }
        }
        #expect(total == expected)
        for (version, count) in granted { #expect(count <= 500, "version \(version) sealed \(count)") }
        #expect(ring.dataKeys.map(\.seals) == ring.dataKeys.map { granted[$0.version] ?? 0 })
        // Every version but the current one is full to within a batch.
        for info in ring.dataKeys.dropLast() { #expect(info.seals > 500 - 3) }
    }
}
