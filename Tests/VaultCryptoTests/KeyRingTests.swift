import Foundation
import Testing
import VaultCore

@testable import VaultCrypto

#if canImport(Glibc)
import Glibc
#endif

@Suite struct KeyRingTests {
    /// A temporary root with `keys/` and `data/` paths.
    final class Directories {
        let root: String
        var keys: String { root + "/keys" }
        var data: String { root + "/data" }
        init() throws {
            var template = Array("/tmp/cv-keyring-XXXXXX".utf8CString)
            root = String(cString: mkdtemp(&template)!)
            try KeyFile.makeDirectory(root + "/data")
        }
        deinit { try? FileManager.default.removeItem(atPath: root) }
        func bytes(_ path: String) -> [UInt8] { (try? [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))) ?? [] }
    }

    @Test func masterKeyIsCreatedOncePrivateAnd32Bytes() throws {
        let directories = try Directories()
        #expect(try KeyRing.createMasterKey(keysDirectory: directories.keys))
        let key = directories.bytes(directories.keys + "/master.key")
        #expect(key.count == 32)
        #expect(!(try KeyRing.createMasterKey(keysDirectory: directories.keys)))
        #expect(directories.bytes(directories.keys + "/master.key") == key)
        var status = stat()
        stat(directories.keys + "/master.key", &status)
        #expect(status.st_mode & 0o777 == 0o600)
        stat(directories.keys, &status)
        #expect(status.st_mode & 0o777 == 0o700)
    }

    @Test func aMissingLooseOrShortMasterKeyIsRefusedClearly() throws {
        let directories = try Directories()
        #expect(throws: KeyRingError(.missing, "")) {
            try KeyRing.open(dataDirectory: directories.data, keysDirectory: directories.keys)
        }
        try KeyRing.createMasterKey(keysDirectory: directories.keys)
        chmod(directories.keys + "/master.key", 0o644)
        #expect(throws: KeyRingError(.insecurePermissions, "")) {
            try KeyRing.open(dataDirectory: directories.data, keysDirectory: directories.keys)
        }
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: directories.keys + "/master.key"))
        chmod(directories.keys + "/master.key", 0o600)
        #expect(throws: KeyRingError(.invalidMasterKey, "")) {
            try KeyRing.open(dataDirectory: directories.data, keysDirectory: directories.keys)
        }
    }

    @Test func rotationAddsVersionsThatSurviveReopenAndOldOnesStillDecrypt() throws {
        let directories = try Directories()
        try KeyRing.createMasterKey(keysDirectory: directories.keys)
        let clock = ManualClock()
        let ring = try KeyRing.open(dataDirectory: directories.data, keysDirectory: directories.keys, clock: clock)
        #expect(ring.currentVersion == 1)
        let sealed = try AESGCM.seal([1, 2, 3] as [UInt8], using: ring.key(version: 1)!)
        clock.advance(by: 3600)
        let info = try ring.rotate()
        #expect(info == DataKeyInfo(version: 2, created: clock.now, retired: false))
        #expect(ring.currentKey().version == 2)
        let fingerprint = try ring.fingerprintKeys.fingerprintKey(forClient: "client-a")

        let reopened = try KeyRing.open(dataDirectory: directories.data, keysDirectory: directories.keys)
        #expect(reopened.dataKeys.map(\.version) == [1, 2])
        #expect(reopened.currentVersion == 2)
        #expect(try AESGCM.open(sealed, using: reopened.key(version: 1)!).withUnsafeBytes { Array($0) } == [1, 2, 3])
        let again = try reopened.fingerprintKeys.fingerprintKey(forClient: "client-a")
        let other = try reopened.fingerprintKeys.fingerprintKey(forClient: "client-b")
        let message = Array("4970101122334455".utf8)
        #expect(
            HMACSHA256.authenticationCode(for: message, using: fingerprint)
                == HMACSHA256.authenticationCode(for: message, using: again))
        #expect(
            HMACSHA256.authenticationCode(for: message, using: other)
                != HMACSHA256.authenticationCode(for: message, using: again))
    }

    @Test func theKeyringFileHoldsNoKeyInTheClear() throws {
        let directories = try Directories()
        try KeyRing.createMasterKey(keysDirectory: directories.keys)
        let ring = try KeyRing.open(dataDirectory: directories.data, keysDirectory: directories.keys)
        try ring.rotate()
        let file = directories.bytes(directories.data + "/keyring.json")
        let text = String(decoding: file, as: UTF8.self)
        for version in [UInt32(1), 2] {
            let raw = ring.key(version: version)!.withUnsafeBytes { Array($0) }
            #expect(!text.contains(Data(raw).base64EncodedString()))
            #expect(!file.indices.dropLast(31).contains { Array(file[$0..<$0 + 32]) == raw })
        }
        var status = stat()
        stat(directories.data + "/keyring.json", &status)
        #expect(status.st_mode & 0o777 == 0o600)
    }

    @Test func aWrongMasterKeyIsToldApartFromADamagedKeyring() throws {
        let directories = try Directories()
        try KeyRing.createMasterKey(keysDirectory: directories.keys)
        _ = try KeyRing.open(dataDirectory: directories.data, keysDirectory: directories.keys)
        let other = try Directories()
        try KeyRing.createMasterKey(keysDirectory: other.keys)
        #expect(throws: KeyRingError(.wrongMasterKey, "")) {
            try KeyRing.open(dataDirectory: directories.data, keysDirectory: other.keys)
        }
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: directories.data + "/keyring.json"))
        #expect(throws: KeyRingError(.damaged, "")) {
            try KeyRing.open(dataDirectory: directories.data, keysDirectory: directories.keys)
        }
    }

    @Test func masterRotationRewrapsEverythingAndAnInterruptedOneIsFinishedOnOpen() throws {
        let directories = try Directories()
        try KeyRing.createMasterKey(keysDirectory: directories.keys)
        let ring = try KeyRing.open(dataDirectory: directories.data, keysDirectory: directories.keys)
        let dek = ring.key(version: 1)!.withUnsafeBytes { Array($0) }
        let oldMaster = directories.bytes(directories.keys + "/master.key")
        try ring.rotateMaster()
        #expect(directories.bytes(directories.keys + "/master.key") != oldMaster)
        let reopened = try KeyRing.open(dataDirectory: directories.data, keysDirectory: directories.keys)
        #expect(reopened.key(version: 1)!.withUnsafeBytes { Array($0) } == dek)

        // Simulate a crash after the keyring was rewritten but before master.key was replaced.
        let newMaster = directories.bytes(directories.keys + "/master.key")
        try Data(newMaster).write(to: URL(fileURLWithPath: directories.keys + "/master.key.next"))
        try Data(oldMaster).write(to: URL(fileURLWithPath: directories.keys + "/master.key"))
        chmod(directories.keys + "/master.key.next", 0o600)
        chmod(directories.keys + "/master.key", 0o600)
        let recovered = try KeyRing.open(dataDirectory: directories.data, keysDirectory: directories.keys)
        #expect(recovered.key(version: 1)!.withUnsafeBytes { Array($0) } == dek)
        #expect(directories.bytes(directories.keys + "/master.key") == newMaster)
        #expect(access(directories.keys + "/master.key.next", F_OK) != 0)
    }

    @Test func retiringDropsTheMaterialButNotTheCurrentVersion() throws {
        let directories = try Directories()
        try KeyRing.createMasterKey(keysDirectory: directories.keys)
        let ring = try KeyRing.open(dataDirectory: directories.data, keysDirectory: directories.keys)
        #expect(throws: KeyRingError(.versionInUse, "")) { try ring.retire(version: 1) }
        try ring.rotate()
        try ring.retire(version: 1)
        #expect(ring.key(version: 1) == nil)
        #expect(throws: KeyRingError(.unknownVersion, "")) { try ring.retire(version: 1) }
        let reopened = try KeyRing.open(dataDirectory: directories.data, keysDirectory: directories.keys)
        #expect(reopened.dataKeys.map(\.retired) == [true, false])
        #expect(reopened.key(version: 1) == nil)
        #expect(try reopened.rotate().version == 3)
    }
}
