/// Walks the frames of one segment during recovery, groups them into atomic batches, and tells a
/// torn tail (an unfinished last batch: cut it off) from damage in the middle (report it, keep
/// going: the frames around it are durable, acknowledged writes).
///
/// Zeros from some point to the end of the segment are space the store preallocated and never
/// wrote: the log ends there. Damage never lets part of a batch in: the unfinished batch before a
/// damaged place and the frames after it up to the next batch start (or through the first end of
/// a batch) are dropped (and counted), so a multi-write batch is applied whole or not at all.
/// (After a power loss, an unacknowledged group in preallocated space may reach the disk with
/// holes; its complete batches may then appear, its partial ones never do.)
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
        /// Sound frames dropped because their batch is cut by damage.
        var droppedFrames = 0
    }

    /// Scans `bytes` from `start`, calling `apply` with each complete batch in log order.
    static func scan(_ bytes: UnsafeRawBufferPointer, from start: Int, apply: ([Frame]) -> Void) -> Result {
        var position = start
        var batch: [Frame] = []
        var batchStart = start
        var damaged: [Range<Int>] = []
        var dropped = 0
        /// After damage: frames are dropped until the next one that starts a batch (or up to the
        /// end of the batch the damage cut).
        var resynchronising = false
        while position < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[position...])
            let parsed = RecordFrame.parse(rest)
            switch parsed {
            case .valid(let header), .damagedBody(let header):
                var isDamaged = false
                if case .damagedBody = parsed {
                    if isZero(UnsafeRawBufferPointer(rebasing: bytes[(position + header.length)...])) {
                        // A write cut short in preallocated space: zeros fill the rest of its body.
                        return Result(
                            end: batchStart, tornBytes: position + header.length - batchStart, damagedRanges: damaged,
                            droppedFrames: dropped)
                    }
                    isDamaged = true
                }
                if resynchronising {
                    if header.flags & RecordFrame.startOfBatch != 0 {
                        resynchronising = false
                    } else {
                        // The rest of a batch whose start the damage took. Its end flag says the
                        // next frame starts a batch (segments written before the start flag
                        // existed carry only this mark).
                        dropped += 1
                        position += header.length
                        batchStart = position
                        if header.flags & RecordFrame.endOfBatch != 0 { resynchronising = false }
                        continue
                    }
                }
                let names = RecordFrame.names(rest, header)
                batch.append(
                    Frame(
                        offset: position, header: header, collection: names.collection, id: names.id, damaged: isDamaged
                    ))
                position += header.length
                if header.flags & RecordFrame.endOfBatch != 0 {
                    apply(batch)
                    batch.removeAll(keepingCapacity: true)
                    batchStart = position
                }
            case .incomplete, .invalid:
                if isZero(UnsafeRawBufferPointer(rebasing: bytes[position...])) {
                    // Preallocated space: the log ends here; an unfinished batch before it is torn.
                    return Result(
                        end: batchStart, tornBytes: position - batchStart, damagedRanges: damaged,
                        droppedFrames: dropped)
                }
                guard let next = nextValidFrame(bytes, after: position) else {
                    // Nothing sound follows: an unfinished write at the tail.
                    return Result(
                        end: batchStart, tornBytes: bytes.count - batchStart, damagedRanges: damaged,
                        droppedFrames: dropped)
                }
                // Sound frames follow, so this is damage, not a torn write. The batch it cut is
                // dropped whole: the frames before it, and those after it up to the batch's end.
                damaged.append(position..<next)
                dropped += batch.count
                batch.removeAll(keepingCapacity: true)
                resynchronising = true
                position = next
                batchStart = next
            }
        }
        if !batch.isEmpty {
            return Result(
                end: batchStart, tornBytes: bytes.count - batchStart, damagedRanges: damaged, droppedFrames: dropped)
        }
        return Result(end: position, tornBytes: 0, damagedRanges: damaged, droppedFrames: dropped)
    }

    /// Whether every byte of `bytes` is zero.
    private static func isZero(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        while index + 8 <= bytes.count {
            if bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) != 0 { return false }
            index += 8
        }
        while index < bytes.count {
            if bytes[index] != 0 { return false }
            index += 1
        }
        return true
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
