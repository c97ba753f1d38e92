import COpenSSL
import CSecureHeap

#if canImport(Glibc)
import Glibc
#endif

/// Memory for secrets that stays out of core dumps and, where the limit allows, out of swap.
///
/// Blocks come from page-aligned chunks mapped with `mmap`, marked `MADV_DONTDUMP` and locked with
/// `mlock` once per chunk, then handed out by size class (32 bytes to 4 KiB, powers of two) from
/// free lists. Doing the two system calls per buffer would cost about 15 µs (measured: page
/// allocation, madvise, mlock, munlock, free), which a decryption per record cannot pay; a block
/// from a free list costs a lock. Larger buffers get chunks of their own, unmapped on release. Released blocks are wiped by
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
        /// The first free block of each size class, as an address (`UInt`: pointers are not
        /// `Sendable`), 0 when none. A free block's first word holds the next one's address.
        var heads = [UInt](repeating: 0, count: SecureMemory.sizeClasses.count)
        var statistics = Statistics(mappedBytes: 0, lockedBytes: 0, unlockedMappings: 0, dumpableMappings: 0)
        /// Large mappings that `mlock` pinned.
        var lockedLarge: Set<UInt> = []
    }

    private let state = ArenaLock(State())
    let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    init() {}

    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// Routes every allocation OpenSSL makes (the key schedules of cipher contexts, HMAC states, the DRBG) to
    /// memory of the same kind: mapped for it, not dumped, locked where the limit allows, wiped when freed. It
    /// must run before OpenSSL allocates anything, first thing in `main`.
    /// - Returns: false when OpenSSL had allocated already (its allocator cannot change any more).
    @discardableResult
    public static func protectOpenSSLAllocations() -> Bool {
        CRYPTO_set_mem_functions(cv_secure_heap_malloc, cv_secure_heap_realloc, cv_secure_heap_free) == 1
    }

    /// Bytes OpenSSL's allocations hold mapped (``protectOpenSSLAllocations()``), and of them the unlocked ones.
    public static var openSSLHeap: (mappedBytes: Int, unlockedBytes: Int) {
        (Int(cv_secure_heap_mapped_bytes()), Int(cv_secure_heap_unlocked_bytes()))
    }

    /// The size class index for `count` bytes (32 << index bytes), nil when it needs a mapping of
    /// its own.
    static func sizeClass(for count: Int) -> Int? {
        guard count <= 4096 else { return nil }
        guard count > 32 else { return 0 }
        return Int.bitWidth - (count - 1).leadingZeroBitCount - 5
    }

    /// A zeroed block of at least `count` bytes.
    ///
    /// Measured (swiftc -O, thread CPU time, one thread, 128-byte blocks, allocation plus release
    /// with a wipe of the block): 45 ns, against 11 ns for the heap. Behind `Locked` (a
    /// `Synchronization.Mutex`) it took 88 ns, hence ``ArenaLock``.
    func allocate(_ count: Int) -> UnsafeMutableRawBufferPointer {
        guard let index = Self.sizeClass(for: count) else {
            let bytes = (count + pageSize - 1) / pageSize * pageSize
            let (start, locked) = map(bytes)
            if locked { state.withLock { _ = $0.lockedLarge.insert(UInt(bitPattern: start)) } }
            return UnsafeMutableRawBufferPointer(start: start, count: bytes)
        }
        let size = 32 << index
        let taken = state.withLock { state -> UInt in
            let head = state.heads[index]
            if let block = UnsafeMutableRawPointer(bitPattern: head) {
                state.heads[index] = block.load(as: UInt.self)
            }
            return head
        }
        if let block = UnsafeMutableRawPointer(bitPattern: taken) {
            block.storeBytes(of: 0, as: UInt.self)  // the link; the rest was wiped on release
            return UnsafeMutableRawBufferPointer(start: block, count: size)
        }
        // A new chunk, carved into blocks of this class; the first is the caller's, the others are
        // chained and put in front of the free list.
        let chunk = map(Self.chunkBytes).start
        let blocks = Self.chunkBytes / size
        if blocks > 1 {
            for number in 1..<(blocks - 1) {
                (chunk + number * size).storeBytes(of: UInt(bitPattern: chunk + (number + 1) * size), as: UInt.self)
            }
            let last = chunk + (blocks - 1) * size
            state.withLock { state in
                last.storeBytes(of: state.heads[index], as: UInt.self)
                state.heads[index] = UInt(bitPattern: chunk + size)
            }
        }
        return UnsafeMutableRawBufferPointer(start: chunk, count: size)
    }

    /// Takes back a block from ``allocate(_:)`` after its owner wiped it.
    func release(_ block: UnsafeMutableRawBufferPointer) {
        guard let start = block.baseAddress else { return }
        if block.count <= 4096, let index = Self.sizeClass(for: block.count), 32 << index == block.count {
            let address = UInt(bitPattern: start)
            state.withLock { state in
                start.storeBytes(of: state.heads[index], as: UInt.self)
                state.heads[index] = address
            }
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

/// The arena's lock: a `pthread_mutex_t`, which costs half of what `Locked` (a
/// `Synchronization.Mutex` plus sanitizer hooks) does on this path (measured: 45 vs 88 ns per
/// allocation and release), and which ThreadSanitizer understands without annotations.
/// Unchecked Sendable: `value` is read and written only while `mutex` is held.
private final class ArenaLock<Value>: @unchecked Sendable {
    private var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init(_ initialValue: Value) {
        value = initialValue
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body(&value)
    }
}
