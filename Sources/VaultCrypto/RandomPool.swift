import COpenSSL
public import VaultCore

/// Cryptographically secure random bytes, drawn from OpenSSL's DRBG in 4 KiB refills so that small
/// values (nonces, tokens) do not each pay a `RAND_bytes` call.
///
/// The pool is a few chunks, each refilled on its own; a draw takes an idle chunk (``IdleSlots``,
/// lock-free), so concurrent callers each work in their own chunk and nobody waits on a lock. When
/// every chunk is busy the draw goes straight to OpenSSL. Bytes handed out are removed from their
/// chunk and cleansed there, so no value is handed out twice. Thread-safe; one refill serves ~340
/// nonces.
public final class RandomPool: RandomSource {
    /// The pool shared by a process. Pass your own for isolation; this one exists for defaults.
    public static let shared = RandomPool()

    private let refillSize: Int
    /// Most chunks made (4); a draw that finds none idle once they all exist uses `RAND_bytes` directly.
    private let chunkLimit: Int
    private let idle = IdleSlots()
    /// Chunks made and not freed (at most `chunkLimit`).
    private let chunks = Locked(0)

    /// - Parameter refillSize: bytes drawn from OpenSSL per refill.
    public convenience init(refillSize: Int = 4096) {
        self.init(refillSize: refillSize, chunkLimit: 4)
    }

    /// A pool of at most `chunkLimit` chunks (tests use 1 to make draws meet busy chunks).
    init(refillSize: Int, chunkLimit: Int) {
        self.refillSize = max(refillSize, 16)
        self.chunkLimit = max(chunkLimit, 1)
    }

    deinit {
        idle.drain { free($0) }
    }

    /// Fills `destination` with random bytes.
    public func fill(_ destination: UnsafeMutableRawBufferPointer) {
        let count = destination.count
        guard count > 0 else { return }
        guard count <= refillSize / 4, let chunk = takeChunk() else {
            Self.drawFromOpenSSL(destination)
            return
        }
        // A chunk: its `used` count in the first word, then `refillSize` bytes (those below `used`
        // already handed out and cleansed).
        let bytes = chunk + Self.header
        var used = chunk.load(as: Int.self)
        if used + count > refillSize {
            Self.drawFromOpenSSL(UnsafeMutableRawBufferPointer(start: bytes, count: refillSize))
            used = 0
        }
        destination.baseAddress!.copyMemory(from: bytes + used, byteCount: count)
        OPENSSL_cleanse(bytes + used, count)
        chunk.storeBytes(of: used + count, as: Int.self)
        if !idle.put(chunk) { free(chunk) }
    }

    // `bytes(count:)` and `next()` come from ``RandomSource``.

    /// Bytes before a chunk's pool bytes (the `used` word, padded to keep the bytes 16-aligned).
    private static let header = 16

    /// An idle chunk, or a new empty one while fewer than `chunkLimit` exist; nil when all are busy.
    private func takeChunk() -> UnsafeMutableRawPointer? {
        if let chunk = idle.take() { return chunk }
        let allowed = chunks.withLock { made in
            guard made < self.chunkLimit else { return false }
            made += 1
            return true
        }
        guard allowed else { return nil }
        // In the secrets' arena: the bytes that become keys never sit in the ordinary heap. The header's second word
        // keeps the block's size, for its release.
        let block = SecureMemory.shared.allocate(Self.header + refillSize)
        let chunk = block.baseAddress!
        (chunk + MemoryLayout<Int>.size).storeBytes(of: block.count, as: Int.self)
        chunk.storeBytes(of: refillSize, as: Int.self)  // starts empty: the first draw refills
        return chunk
    }

    /// Cleanses and frees a chunk no slot would take (or one left at `deinit`).
    private func free(_ chunk: UnsafeMutableRawPointer) {
        let count = (chunk + MemoryLayout<Int>.size).load(as: Int.self)
        OPENSSL_cleanse(chunk, count)
        SecureMemory.shared.release(UnsafeMutableRawBufferPointer(start: chunk, count: count))
        chunks.withLock { $0 -= 1 }
    }

    private static func drawFromOpenSSL(_ buffer: UnsafeMutableRawBufferPointer) {
        // RAND_bytes fails only when the DRBG cannot be seeded; going on would hand out
        // predictable bytes, so stop the process instead.
        guard RAND_bytes(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(buffer.count)) == 1 else {
            fatalError("OpenSSL RAND_bytes failed: the random generator could not be seeded")
        }
    }
}
