import Foundation

/// A snapshot of the record index written to `index.checkpoint`, so start-up reads one file and
/// replays only the log written after it instead of every segment.
///
/// Layout (little-endian): magic `CVIDXCK1`, u32 segment and u64 offset of the log position the
/// snapshot covers, u64 record count, u32 collection count; per collection: u8 name length, name,
/// u64 record count, then per record in id order: u8 id length, id, u32 segment, u32 offset,
/// u32 frame length, u32 key version, u64 record version, u8 flags; finally a CRC-32C of all of it.
/// It holds ids and locations only, never values.
enum IndexCheckpoint {
    static let fileName = "index.checkpoint"
    private static let magic = Array("CVIDXCK1".utf8)

    /// A log position: everything before `offset` in `segment` (and in older segments) is covered.
    struct Position: Equatable, Sendable {
        var segment: UInt32
        var offset: UInt64
    }

    /// The whole checkpoint of `index` in one array (tests; the store streams it with ``Encoder``).
    static func encode(_ index: RecordIndex, position: Position) -> [UInt8] {
        let encoder = Encoder(index, position: position)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(encoder.size)
        encoder.write(chunkBytes: 1 << 20) { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// Writes the checkpoint of an index in pieces, so that a million records (some 100 MB) never sit in memory
    /// twice and reach the disk at a pace the log's syncs can share (see docs/hot-path.md).
    struct Encoder {
        let index: RecordIndex
        let position: Position
        /// Each collection's entry numbers in id order.
        private let orders: [[Int]]
        /// The checkpoint's size in bytes (ids are the only variable part).
        let size: Int

        init(_ index: RecordIndex, position: Position) {
            self.index = index
            self.position = position
            orders = index.collectionNames.indices.map { index.orderedEntries(collection: $0) }
            var size = magic.count + 4 + 8 + 8 + 4 + 4
            for (code, name) in index.collectionNames.enumerated() {
                size += 1 + name.utf8.count + 8
                for entry in orders[code] { size += fixedRecordBytes + Int(index[entry].keyLength) }
            }
            self.size = size
        }

        /// Hands the checkpoint to `sink` in order, in pieces of `chunkBytes` (at least 4 KiB) but the last,
        /// which ends with the CRC.
        func write(chunkBytes: Int, to sink: (UnsafeRawBufferPointer) throws -> Void) rethrows {
            let capacity = max(chunkBytes, 4096)
            // Room for the largest item (a collection's header or a record, each under 300 bytes) past a full chunk.
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity + 512, alignment: 16)
            defer { buffer.deallocate() }
            var output = Writer(base: buffer)
            var checksum: UInt32 = 0
            var written = 0
            func flushIfFull() throws {
                guard output.offset >= capacity else { return }
                let piece = UnsafeRawBufferPointer(start: buffer, count: output.offset)
                checksum = CRC32C.checksum(piece, seed: checksum)
                try sink(piece)
                written += output.offset
                output.offset = 0
            }
            magic.withUnsafeBytes { output.append($0) }
            output.append(position.segment)
            output.append(position.offset)
            output.append(UInt64(index.count))
            output.append(UInt32(index.collectionNames.count))
            for (code, name) in index.collectionNames.enumerated() {
                output.append(UInt8(name.utf8.count))
                withBytes(name) { output.append($0) }
                output.append(UInt64(orders[code].count))
                try flushIfFull()
                for entry in orders[code] {
                    index.withKey(of: entry) { key in
                        output.append(UInt8(key.count))
                        output.append(key)
                    }
                    let item = index[entry]
                    output.append(item.location.segment)
                    output.append(item.location.offset)
                    output.append(item.location.length)
                    output.append(item.location.keyVersion)
                    output.append(item.location.version)
                    output.append(item.flags & RecordIndex.corrupted)
                    try flushIfFull()
                }
            }
            output.append(CRC32C.checksum(UnsafeRawBufferPointer(start: buffer, count: output.offset), seed: checksum))
            precondition(written + output.offset == size, "index checkpoint: size miscounted")
            try sink(UnsafeRawBufferPointer(start: buffer, count: output.offset))
        }
    }

    /// True when `first` sorts strictly before `second` (bytewise, shorter first on a tie), as the index orders ids.
    private static func ascending(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Bool {
        let common = min(first.count, second.count)
        if common > 0 {
            let result = memcmp(first.baseAddress!, second.baseAddress!, common)
            if result != 0 { return result < 0 }
        }
        return first.count < second.count
    }

    /// A record's bytes besides its id: id length, segment, offset, frame length, key version, version, flags.
    private static let fixedRecordBytes = 1 + 4 + 4 + 4 + 4 + 8 + 1

    /// Writes little-endian integers and bytes into memory sized beforehand.
    private struct Writer {
        let base: UnsafeMutableRawPointer
        var offset = 0

        mutating func append<T: FixedWidthInteger>(_ value: T) {
            base.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self)
            offset += MemoryLayout<T>.size
        }

        mutating func append(_ bytes: UnsafeRawBufferPointer) {
            if let source = bytes.baseAddress, bytes.count > 0 {
                (base + offset).copyMemory(from: source, byteCount: bytes.count)
            }
            offset += bytes.count
        }
    }

    /// Rebuilds the index from a checkpoint, or nil if the bytes are not a whole, valid one.
    static func decode(_ bytes: [UInt8]) -> (RecordIndex, Position)? {
        bytes.withUnsafeBytes { raw -> (RecordIndex, Position)? in
            guard raw.count >= 36, Array(raw[0..<8]) == magic else { return nil }
            let body = UnsafeRawBufferPointer(rebasing: raw[0..<raw.count - 4])
            guard
                CRC32C.checksum(body) == raw.loadUnaligned(fromByteOffset: raw.count - 4, as: UInt32.self).littleEndian
            else { return nil }
            var cursor = 8
            func take<T: FixedWidthInteger>(_: T.Type) -> T? {
                guard cursor + MemoryLayout<T>.size <= body.count else { return nil }
                defer { cursor += MemoryLayout<T>.size }
                return T(littleEndian: body.loadUnaligned(fromByteOffset: cursor, as: T.self))
            }
            func bytes(_ count: Int) -> UnsafeRawBufferPointer? {
                guard cursor + count <= body.count else { return nil }
                defer { cursor += count }
                return UnsafeRawBufferPointer(rebasing: body[cursor..<cursor + count])
            }
            guard let segment = take(UInt32.self), let offset = take(UInt64.self), let total = take(UInt64.self),
                let collections = take(UInt32.self), total < UInt64(body.count)
            else { return nil }
            var index = RecordIndex()
            var seen: Set<String> = []
            index.reserve(records: Int(total), keyBytes: body.count - Int(total) * 25)
            for _ in 0..<collections {
                // Names and ids the store wrote are UTF-8; other bytes would be changed by decoding (and could
                // then outgrow their one-byte length when the index is written back).
                guard let nameLength = take(UInt8.self), let name = bytes(Int(nameLength)),
                    let collection = String(validating: name, as: UTF8.self), let count = take(UInt64.self),
                    count <= total
                else { return nil }
                // Each collection once, its ids strictly ascending: the index's order is built as it reads, and a
                // checkpoint that broke either rule would leave it out of order (refused; the log is replayed).
                guard seen.insert(collection).inserted else { return nil }
                let code = index.declareCollection(collection)
                var previous: UnsafeRawBufferPointer?
                for _ in 0..<count {
                    guard let keyLength = take(UInt8.self), let key = bytes(Int(keyLength)),
                        previous.map({ Self.ascending($0, key) }) ?? true,
                        String(validating: key, as: UTF8.self) != nil,
                        let segment = take(UInt32.self), let offset = take(UInt32.self), let length = take(UInt32.self),
                        let keyVersion = take(UInt32.self), let version = take(UInt64.self),
                        let flags = take(UInt8.self)
                    else { return nil }
                    index.appendSorted(
                        code: code, key: key,
                        location: RecordLocation(
                            segment: segment, offset: offset, length: length, keyVersion: keyVersion, version: version),
                        flags: flags)
                    previous = key
                }
            }
            guard cursor == body.count, index.count == Int(total) else { return nil }
            index.finishLoading()
            return (index, Position(segment: segment, offset: offset))
        }
    }
}
