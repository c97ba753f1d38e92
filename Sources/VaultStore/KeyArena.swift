/// The record index's id bytes: an append-only arena of 64 KiB chunks, each id whole in one chunk.
///
/// Bytes once written never change, so a copy of the index (a checkpoint's snapshot) shares every chunk with the
/// live index, which only writes past the end of what any copy can read: no chunk is ever copied. An id's place
/// is `chunk << 16 | offset`. Compacting the arena builds new chunks; a copy still reading keeps the old ones.
struct KeyArena: Sendable {
    static let chunkShift = 16
    static let chunkBytes = 1 << chunkShift

    /// One chunk's memory, freed with the last index that refers to it. Sendable: a copy of the arena on another
    /// thread reads only bytes written before the copy was made, and they never change.
    final class Chunk: @unchecked Sendable {
        let base = UnsafeMutableRawPointer.allocate(byteCount: KeyArena.chunkBytes, alignment: 16)
        deinit { base.deallocate() }
    }

    private var chunks: [Chunk] = []
    /// Bytes used in the last chunk.
    private var used = 0
    /// Bytes of ids written (dead ones included, until a compaction).
    private(set) var byteCount = 0

    init() {}

    /// Copies `key` in (at most 255 bytes) and returns its place.
    mutating func append(_ key: UnsafeRawBufferPointer) -> UInt32 {
        if chunks.isEmpty || used + key.count > Self.chunkBytes {
            precondition(chunks.count < 1 << (32 - Self.chunkShift), "record index: id arena full")
            chunks.append(Chunk())
            used = 0
        }
        let start = UInt32((chunks.count - 1) << Self.chunkShift | used)
        if let source = key.baseAddress, key.count > 0 {
            (chunks[chunks.count - 1].base + used).copyMemory(from: source, byteCount: key.count)
        }
        used += key.count
        byteCount += key.count
        return start
    }

    /// The `count` bytes at `start`, valid while this arena (or a copy of it) lives.
    func bytes(at start: UInt32, count: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(
            start: chunks[Int(start) >> Self.chunkShift].base + (Int(start) & (Self.chunkBytes - 1)), count: count)
    }

    /// Room for `bytes` bytes of ids without regrowing the list of chunks.
    mutating func reserveCapacity(_ bytes: Int) {
        chunks.reserveCapacity(bytes / (Self.chunkBytes - 255) + 1)
    }

    /// Heap bytes held.
    var capacityBytes: Int { chunks.count * Self.chunkBytes + chunks.capacity * 8 }
}
