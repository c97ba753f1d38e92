import Foundation
import FuzzSupport
import VaultCore
import VaultCrypto

@testable import FuzzStoreSupport
@testable import VaultStore

/// A whole data directory as start-up finds it: ``EncryptedFileStore/open(directory:keysDirectory:options:)``
/// over a fuzzed segment file and index checkpoint (with the fixture keyring and the throwaway master key),
/// then every record it recovered read back. The input is a mode byte (bit 0: rewrite the frame CRCs, bit 1:
/// rewrite the checkpoint's CRC, bit 2: no checkpoint), a little-endian u16 checkpoint length, the checkpoint,
/// then the segment file. Properties: opening either succeeds or throws (never traps or hangs), every
/// recovered record reads or throws, a write after recovery works or throws, and the store closes.
@main
enum StoreRecoveryFuzz {
    static let keys = StoreFixture.keysDirectory()
    static let data = StoreFixture.scratch("recovery-data")

    static func main() {
        StoreFixture.writeSeedsIfAsked()
        FuzzDriver.run { input in
            guard input.count >= 3 else { return }
            let mode = input[0]
            let checkpointLength = min(Int(input[1]) | Int(input[2]) << 8, input.count - 3)
            var checkpoint = Array(input[3..<3 + checkpointLength])
            var segment = Array(input[(3 + checkpointLength)...])
            if mode & 1 != 0 { StoreFixture.repairChecksums(&segment, from: EncryptedFileStore.segmentHeaderSize) }
            if mode & 2 != 0, checkpoint.count >= 4 {
                let crc = CRC32C.checksum(Array(checkpoint[0..<checkpoint.count - 4]))
                StoreFixture.store(crc, in: &checkpoint, at: checkpoint.count - 4)
            }
            let files = FileManager.default
            try? files.removeItem(atPath: data)
            try? files.createDirectory(atPath: data + "/segments", withIntermediateDirectories: true)
            try? files.copyItem(atPath: StoreFixture.keyRingFixture, toPath: data + "/" + KeyRing.keyRingFileName)
            _ = files.createFile(atPath: data + "/segments/00000001.seg", contents: Data(segment))
            if mode & 4 == 0 {
                _ = files.createFile(atPath: data + "/" + IndexCheckpoint.fileName, contents: Data(checkpoint))
            }
            guard
                let store = try? EncryptedFileStore.open(
                    directory: data, keysDirectory: keys,
                    options: FileStoreOptions(preallocationBytes: 0, automaticCompaction: false))
            else { return }
            let records = store.withState { state in
                state.index.collectionNames.prefix(16).flatMap { name in
                    state.index.scan(name, prefix: "", after: nil, limit: 64).map { (name, state.index.id(of: $0)) }
                }
            }
            runBlocking {
                for (collection, id) in records { _ = try? await store.get(collection, id: id) }
                _ = try? await store.put("fuzz", id: "after-recovery", value: [1, 2, 3])
            }
            store.close()
        }
    }
}
