import COpenSSL
public import VaultCore

/// Cryptographically secure random bytes, drawn from OpenSSL's DRBG in 4 KiB refills so that small
/// values (nonces, tokens) do not each pay a `RAND_bytes` call.
///
/// Bytes handed out are removed from the pool and cleansed there, so no value is handed out
/// twice. Thread-safe; one refill serves ~340 nonces.
public final class RandomPool: RandomSource {
    /// The pool shared by a process. Pass your own for isolation; this one exists for defaults.
    public static let shared = RandomPool()

    /// The pooled bytes; `used` (under the lock) counts those already handed out.
    private nonisolated(unsafe) let buffer: UnsafeMutableRawBufferPointer
    private let used: Locked<Int>

    /// - Parameter refillSize: bytes drawn from OpenSSL per refill.
    public init(refillSize: Int = 4096) {
        buffer = .allocate(byteCount: refillSize, alignment: 16)
        used = Locked(refillSize)  // starts empty: the first draw refills
    }

    deinit {
        OPENSSL_cleanse(buffer.baseAddress, buffer.count)
        buffer.deallocate()
    }

    /// Fills `destination` with random bytes.
    public func fill(_ destination: UnsafeMutableRawBufferPointer) {
        let count = destination.count
        guard count > 0 else { return }
        if count > buffer.count / 4 {
            Self.drawFromOpenSSL(destination)
            return
        }
        used.withLock { used in
            if used + count > buffer.count {
                Self.drawFromOpenSSL(buffer)
                used = 0
            }
            let source = UnsafeMutableRawBufferPointer(rebasing: buffer[used..<used + count])
            destination.copyMemory(from: UnsafeRawBufferPointer(source))
            OPENSSL_cleanse(source.baseAddress, source.count)
            used += count
        }
    }

    // `bytes(count:)` and `next()` come from ``RandomSource``.

    private static func drawFromOpenSSL(_ buffer: UnsafeMutableRawBufferPointer) {
        // RAND_bytes fails only when the DRBG cannot be seeded; going on would hand out
        // predictable bytes, so stop the process instead.
        guard RAND_bytes(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(buffer.count)) == 1 else {
            fatalError("OpenSSL RAND_bytes failed: the random generator could not be seeded")
        }
    }
}
