import FuzzSupport

@testable import FuzzStoreSupport
@testable import VaultStore

/// The index checkpoint file (``IndexCheckpoint/decode(_:)``), read at start-up before the log is replayed.
/// The input is a mode byte (bit 0: rewrite the trailing CRC first, so mutations reach the decoder) and the
/// file. Properties: a decoded index answers lookups and scans for what it holds, and encodes back to bytes
/// that decode to the same position and count.
@main
enum IndexCheckpointFuzz {
    static func main() {
        StoreFixture.writeSeedsIfAsked()
        FuzzDriver.run { input in
            guard let mode = input.first else { return }
            var bytes = Array(input.dropFirst())
            if mode & 1 != 0, bytes.count >= 4 {
                let crc = CRC32C.checksum(Array(bytes[0..<bytes.count - 4]))
                StoreFixture.store(crc, in: &bytes, at: bytes.count - 4)
            }
            guard let (index, position) = IndexCheckpoint.decode(bytes) else { return }
            for name in index.collectionNames.prefix(8) {
                for entry in index.scan(name, prefix: "", after: nil, limit: 16) {
                    let code = index.entries[entry].collection
                    // By the id's bytes: a checkpoint may hold ids that are not UTF-8.
                    let found = index.withKey(of: entry) { index.find(code: code, key: $0) }
                    FuzzCheck.require(found != nil, "a scanned record is not found by its id")
                    _ = index.id(of: entry)
                }
            }
            let again = IndexCheckpoint.encode(index, position: position)
            guard let (decoded, samePosition) = IndexCheckpoint.decode(again) else {
                FuzzCheck.require(false, "a re-encoded checkpoint does not decode")
                return
            }
            FuzzCheck.require(samePosition == position && decoded.count == index.count, "re-encoding changed the index")
        }
    }
}
