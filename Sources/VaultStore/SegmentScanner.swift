/// Walks the frames of one segment during recovery, groups them into atomic batches, and tells a
/// torn tail (an unfinished last batch: cut it off) from damage in the middle (report it, keep
/// going: the frames around it are durable, acknowledged writes).
struct SegmentScanner {
    /// One frame found in a segment.
    struct Frame {
        var offset: Int
        var header: RecordFrame.Header
        var collection: String
        var id: String
        /// The header is sound but the body's checksum fails.
        var damaged: Bool
    }

    /// What a scan found.
    struct Result {
        /// Where the good log ends: appends continue here (bytes after it are a torn tail).
        var end: Int
        /// Bytes after `end`, cut off as an unfinished write.
        var tornBytes: Int
        /// Ranges whose frames cannot be parsed at all (damaged headers).
        var damagedRanges: [Range<Int>]
    }

    /// Scans `bytes` from `start`, calling `apply` with each complete batch in log order.
    static func scan(_ bytes: UnsafeRawBufferPointer, from start: Int, apply: ([Frame]) -> Void) -> Result {
        var position = start
        var batch: [Frame] = []
        var batchStart = start
        var damaged: [Range<Int>] = []
        while position < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[position...])
            let parsed = RecordFrame.parse(rest)
            switch parsed {
            case .valid(let header), .damagedBody(let header):
                var isDamaged = false
                if case .damagedBody = parsed { isDamaged = true }
                let names = RecordFrame.names(rest, header)
                batch.append(
                    Frame(offset: position, header: header, collection: names.collection, id: names.id, damaged: isDamaged))
                position += header.length
                if header.flags & RecordFrame.endOfBatch != 0 {
                    apply(batch)
                    batch.removeAll(keepingCapacity: true)
                    batchStart = position
                }
            case .incomplete, .invalid:
                guard let next = nextValidFrame(bytes, after: position) else {
                    // Nothing sound follows: an unfinished write at the tail.
                    return Result(end: batchStart, tornBytes: bytes.count - batchStart, damagedRanges: damaged)
                }
                // Sound frames follow, so this is damage, not a torn write: keep what the batch
                // had (it was durable) and resume at the next sound frame.
                damaged.append(position..<next)
                if !batch.isEmpty {
                    apply(batch)
                    batch.removeAll(keepingCapacity: true)
                }
                position = next
                batchStart = next
            }
        }
        if !batch.isEmpty {
            return Result(end: batchStart, tornBytes: bytes.count - batchStart, damagedRanges: damaged)
        }
        return Result(end: position, tornBytes: 0, damagedRanges: damaged)
    }

    /// The offset of the next frame after `position` whose header and body both check out.
    private static func nextValidFrame(_ bytes: UnsafeRawBufferPointer, after position: Int) -> Int? {
        var candidate = position + 1
        while candidate + RecordFrame.fixedHeaderSize <= bytes.count {
            if case .valid = RecordFrame.parse(UnsafeRawBufferPointer(rebasing: bytes[candidate...])) {
                return candidate
            }
            candidate += 1
        }
        return nil
    }
}
