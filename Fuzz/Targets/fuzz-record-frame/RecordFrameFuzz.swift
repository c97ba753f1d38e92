import FuzzSupport

@testable import FuzzStoreSupport
@testable import VaultStore

/// One record frame as read from disk (``RecordFrame/parse(_:)``, ``RecordFrame/names(_:_:)``, then the sealed
/// value opened under the fixture keyring as the store's read path does). The input is a mode byte (bit 0:
/// rewrite the CRCs first, so mutations get past them) and the frame bytes. Properties: a parsed header
/// stays inside the bytes, a valid frame's names and sealed range fit its length, and reflagging a valid frame
/// keeps it valid.
@main
enum RecordFrameFuzz {
    static let keyRing = StoreFixture.openKeyRing()

    static func main() {
        StoreFixture.writeSeedsIfAsked()
        _ = keyRing
        FuzzDriver.run { input in
            guard let mode = input.first else { return }
            var bytes = Array(input.dropFirst())
            if mode & 1 != 0 { StoreFixture.repairChecksums(&bytes, from: 0) }
            bytes.withUnsafeBytes { raw in
                switch RecordFrame.parse(raw) {
                case .valid(let header), .damagedBody(let header):
                    FuzzCheck.require(header.length <= raw.count, "frame longer than the bytes")
                    FuzzCheck.require(header.namesEnd <= header.sealedRange.lowerBound, "names overlap the value")
                    FuzzCheck.require(header.sealedRange.upperBound <= header.length, "value past the frame")
                    let names = RecordFrame.names(raw, header)
                    FuzzCheck.require(
                        names.collection.utf8.count <= header.collectionLength * 3, "collection name out of bounds")
                    _ = StoreFixture.openValue(raw, header, keyRing: keyRing)
                case .incomplete, .invalid:
                    break
                }
            }
            if case .valid(let header) = bytes.withUnsafeBytes({ RecordFrame.parse($0) }) {
                var frame = Array(bytes[0..<header.length])
                RecordFrame.reflag(&frame, flags: header.flags ^ RecordFrame.startOfBatch)
                guard case .valid = frame.withUnsafeBytes({ RecordFrame.parse($0) }) else {
                    FuzzCheck.require(false, "a reflagged frame is no longer valid")
                    return
                }
            }
        }
    }
}
