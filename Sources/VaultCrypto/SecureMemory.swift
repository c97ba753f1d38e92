import VaultCore

#if canImport(Glibc)
import Glibc
#endif

/// Memory for secrets that stays out of core dumps and, where the limit allows, out of swap.
///
/// Blocks come from page-aligned chunks mapped with `mmap`, marked `MADV_DONTDUMP` and locked with
/// `mlock` once per chunk, then handed out by size class (32 bytes to 4 KiB) from free lists. Doing
/// the two system calls per buffer would cost about 15 µs (measured: page allocation, madvise,
/// mlock, munlock, free), which a decryption per record cannot pay; a block from a free list costs
/// a lock. Larger buffers get chunks of their own, unmapped on release. Released blocks are wiped by
/// their owner (``SecureBytes``) before they return here, so every block handed out is zero.
///
/// `mlock` is best-effort: when `RLIMIT_MEMLOCK` is used up (8 MiB by default for a non-root user)
/// the chunk stays unlocked but still excluded from dumps, and ``statistics`` counts it. Chunks are
/// never returned to the system: the arena keeps the high-water mark of live secrets.
///
/// One arena per process (``shared``), like OpenSSL's secure heap: the memory it manages is a
/// process-wide resource (one memlock limit, one dump filter).
public final class SecureMemory: Sendable {
    /// The process's arena.
    public static let shared = SecureMemory()

    /// What the arena holds.
    public struct Statistics: Sendable, Equatable {
        /// Bytes mapped for secrets (chunks and large buffers).
        public var mappedBytes: Int
        /// Of them, bytes `mlock` pinned to RAM.
        public var lockedBytes: Int
        /// Mappings `mlock` refused (the memlock limit was reached); they are still not dumped.
        public var unlockedMappings: Int
        /// Mappings `madvise(MADV_DONTDUMP)` refused.
        public var dumpableMappings: Int
    }

    static let sizeClasses = [32, 64, 128, 256, 512, 1024, 2048, 4096]
    static let chunkBytes = 64 << 10

    private struct State {
        /// Free blocks by size class, as addresses (`UInt`: pointers are not `Sendable`).
        var free: [[UInt]] = Array(repeating: [], count: SecureMemory.sizeClasses.count)
        var statistics = Statistics(mappedBytes: 0, lockedBytes: 0, unlockedMappings: 0, dumpableMappings: 0)
        /// Large mappings that `mlock` pinned.
        var lockedLarge: Set<UInt> = []
    }

    private let state = Locked(State())
    let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    init() {}

    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// The size class index for `count` bytes, nil when it needs a mapping of its own.
    static func sizeClass(for count: Int) -> Int? {
        sizeClasses.firstIndex { $0 >= count }
    }

    /// A zeroed block of at least `count` bytes: `(start, capacity)`.
    func allocate(_ count: Int) -> UnsafeMutableRawBufferPointer {
        guard let index = Self.sizeClass(for: count) else {
            let bytes = (count + pageSize - 1) / pageSize * pageSize
            let (start, locked) = map(bytes)
            if locked { state.withLock { _ = $0.lockedLarge.insert(UInt(bitPattern: start)) } }
            return UnsafeMutableRawBufferPointer(start: start, count: bytes)
        }
        let size = Self.sizeClasses[index]
        if let address = state.withLock({ $0.free[index].popLast() }), let block = UnsafeMutableRawPointer(bitPattern: address) {
            return UnsafeMutableRawBufferPointer(start: block, count: size)
        }
        // A new chunk, carved into blocks of this class; the first is the caller's.
        let chunk = map(Self.chunkBytes).start
        let blocks = Self.chunkBytes / size
        let base = UInt(bitPattern: chunk)
        state.withLock { state in
            for offset in stride(from: (blocks - 1) * size, to: 0, by: -size) {
                state.free[index].append(base + UInt(offset))
            }
        }
        return UnsafeMutableRawBufferPointer(start: chunk, count: size)
    }

    /// Takes back a block from ``allocate(_:)`` after its owner wiped it.
    func release(_ block: UnsafeMutableRawBufferPointer) {
        guard let start = block.baseAddress else { return }
        if let index = Self.sizeClasses.firstIndex(of: block.count) {
            let address = UInt(bitPattern: start)
            state.withLock { $0.free[index].append(address) }
            return
        }
        let address = UInt(bitPattern: start)
        let locked = state.withLock { $0.lockedLarge.remove(address) != nil }
        if locked { munlock(start, block.count) }
        munmap(start, block.count)
        state.withLock { state in
            state.statistics.mappedBytes -= block.count
            if locked { state.statistics.lockedBytes -= block.count }
        }
    }

    private func map(_ bytes: Int) -> (start: UnsafeMutableRawPointer, locked: Bool) {
        let raw = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let raw, raw != UnsafeMutableRawPointer(bitPattern: -1) else {
            fatalError("SecureMemory: mmap of \(bytes) bytes failed (errno \(errno))")
        }
        let excluded = madvise(raw, bytes, Int32(MADV_DONTDUMP)) == 0
        let locked = mlock(raw, bytes) == 0
        state.withLock { state in
            state.statistics.mappedBytes += bytes
            if locked { state.statistics.lockedBytes += bytes } else { state.statistics.unlockedMappings += 1 }
            if !excluded { state.statistics.dumpableMappings += 1 }
        }
        return (raw, locked)
    }
}
