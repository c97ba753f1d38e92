import FuzzSupport

@testable import FuzzStoreSupport
@testable import VaultStore

/// A segment file as recovery reads it (``SegmentScanner/scan(_:from:apply:)`` from after the segment header,
/// every frame of every batch it applies opened as the store's read path does). The input is a mode byte
/// (bit 0: rewrite the CRCs of the frames first; bits 1–7: where the scan starts, as a checkpoint's offset
/// would say) and the segment bytes. Properties: the good end and the torn tail lie inside the file, applied
/// frames are whole, in order and end before the good end, and damaged ranges lie inside the file.
@main
enum SegmentScannerFuzz {
    static let keyRing = StoreFixture.openKeyRing()

    static func main() {
        StoreFixture.writeSeedsIfAsked()
        _ = keyRing
        FuzzDriver.run { input in
            guard let mode = input.first else { return }
            var bytes = Array(input.dropFirst())
            let header = EncryptedFileStore.segmentHeaderSize
            let start = min(bytes.count, mode >> 1 == 0 ? header : Int(mode >> 1))
            if mode & 1 != 0 { StoreFixture.repairChecksums(&bytes, from: start) }
            bytes.withUnsafeBytes { raw in
                var lastEnd = start
                let result = SegmentScanner.scan(raw, from: start) { batch in
                    for frame in batch {
                        FuzzCheck.require(frame.offset >= lastEnd, "frames out of order")
                        FuzzCheck.require(frame.offset + frame.header.length <= raw.count, "frame past the file")
                        lastEnd = frame.offset + frame.header.length
                        let slice = UnsafeRawBufferPointer(
                            rebasing: raw[frame.offset..<frame.offset + frame.header.length])
                        if !frame.damaged { _ = StoreFixture.openValue(slice, frame.header, keyRing: keyRing) }
                    }
                }
                FuzzCheck.require(result.end >= start && result.end <= raw.count, "good end outside the file")
                FuzzCheck.require(
                    result.tornBytes >= 0 && result.end + result.tornBytes <= raw.count, "torn tail outside")
                FuzzCheck.require(lastEnd <= result.end, "an applied frame ends after the good end")
                for range in result.damagedRanges {
                    FuzzCheck.require(range.lowerBound >= start && range.upperBound <= raw.count, "damage outside")
                }
            }
        }
    }
}
