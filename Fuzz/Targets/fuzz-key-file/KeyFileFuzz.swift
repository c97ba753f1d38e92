import Foundation
import FuzzSupport

@testable import FuzzStoreSupport
@testable import VaultCrypto

/// The key files a data directory starts from, read through the same calls as start-up: the keyring
/// (`keyring.json`, ``KeyRing/open(dataDirectory:keysDirectory:clock:)`` under the throwaway master key) and
/// the master key file (``KeyFile/readSecret(_:requirePrivate:)``, ``KeyRing/readMasterKey(_:)``). The input
/// is a mode byte (bit 0: the bytes are the master key file, else the keyring) and the file. Properties: an
/// opened keyring has a current key it can hand out, and every version it lists as live has its key.
@main
enum KeyFileFuzz {
    static let keys = StoreFixture.keysDirectory()
    static let data = StoreFixture.scratch("keyfile-data")
    static let masterCopy = StoreFixture.scratch("keyfile-master") + "/" + KeyRing.masterKeyFileName

    static func main() {
        StoreFixture.writeSeedsIfAsked()
        FuzzDriver.run { input in
            guard let mode = input.first else { return }
            let bytes = Data(input.dropFirst())
            if mode & 1 != 0 {
                _ = FileManager.default.createFile(
                    atPath: masterCopy, contents: bytes, attributes: [.posixPermissions: 0o600])
                if let secret = try? KeyFile.readSecret(masterCopy) {
                    FuzzCheck.require(secret.count == bytes.count, "read another size than the file's")
                }
                _ = try? KeyRing.readMasterKey(masterCopy)
                return
            }
            let ring = data + "/" + KeyRing.keyRingFileName
            unlink(ring)
            _ = FileManager.default.createFile(atPath: ring, contents: bytes, attributes: [.posixPermissions: 0o600])
            guard let keyRing = try? KeyRing.open(dataDirectory: data, keysDirectory: keys) else { return }
            let current = keyRing.currentKey()
            FuzzCheck.require(keyRing.key(version: current.version) != nil, "the current key is missing")
            for info in keyRing.dataKeys where !info.retired {
                FuzzCheck.require(keyRing.key(version: info.version) != nil, "a live version has no key")
            }
        }
    }
}
