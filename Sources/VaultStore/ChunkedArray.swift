/// An array kept in chunks of 2048 elements, each copied on write by itself.
///
/// The record index holds a million entries and hash slots in these. A checkpoint takes the index by value, so
/// the first change after it would copy a flat array whole under the store's lock (some 80 MB on a million
/// records, tens of milliseconds in which no read or commit moves). Here that copy is the list of chunk
/// references, and each chunk is copied on its own first change: the same bytes in all, spread over the changes
/// and at most one chunk (64 KiB of 32-byte entries, under glibc's `mmap` threshold) at a time.
struct ChunkedArray<Element> {
    static var chunkShift: Int { 11 }
    static var chunkSize: Int { 1 << chunkShift }
    static var chunkMask: Int { chunkSize - 1 }

    private var chunks: [ContiguousArray<Element>] = []
    /// Elements held.
    private(set) var count = 0

    init() {}

    /// `count` copies of `value`.
    init(repeating value: Element, count: Int) {
        var left = count
        chunks.reserveCapacity((count + Self.chunkMask) >> Self.chunkShift)
        while left > 0 {
            let size = min(left, Self.chunkSize)
            chunks.append(ContiguousArray(repeating: value, count: size))
            left -= size
        }
        self.count = count
    }

    /// An array over full chunks (``chunkSize`` elements each), such as ones allocated ahead of need.
    init(fullChunks: [ContiguousArray<Element>]) {
        precondition(fullChunks.allSatisfy { $0.count == Self.chunkSize }, "a chunk that is not full")
        chunks = fullChunks
        count = fullChunks.count << Self.chunkShift
    }

    var indices: Range<Int> { 0..<count }

    subscript(position: Int) -> Element {
        get { chunks[position >> Self.chunkShift][position & Self.chunkMask] }
        set { chunks[position >> Self.chunkShift][position & Self.chunkMask] = newValue }
    }

    mutating func append(_ element: Element) {
        if count & Self.chunkMask == 0 {
            var chunk = ContiguousArray<Element>()
            chunk.reserveCapacity(Self.chunkSize)
            chunks.append(chunk)
        }
        chunks[chunks.count - 1].append(element)
        count += 1
    }

    /// Room for `count` elements without regrowing the list of chunks.
    mutating func reserveCapacity(_ count: Int) {
        chunks.reserveCapacity((count + Self.chunkMask) >> Self.chunkShift)
    }

    /// Heap bytes held by the elements' chunks.
    var capacityBytes: Int {
        chunks.reduce(0) { $0 + $1.capacity * MemoryLayout<Element>.stride } + chunks.capacity * 8
    }
}

extension ChunkedArray: Sendable where Element: Sendable {}
