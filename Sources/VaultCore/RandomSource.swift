/// Where random bytes come from: identifiers, secrets, salts, nonces. Inject it; never reach for a shared pool
/// in domain code. The daemon passes VaultCrypto's `RandomPool` (OpenSSL's DRBG); tests may pass a seeded
/// source to make identifiers reproducible.
public protocol RandomSource: Sendable {
    /// Fills `destination` with random bytes.
    func fill(_ destination: UnsafeMutableRawBufferPointer)
}

extension RandomSource {
    /// `count` random bytes as an array.
    public func bytes(count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            fill(UnsafeMutableRawBufferPointer(buffer))
            initialized = count
        }
    }

    /// A uniformly random 64-bit value.
    public func next() -> UInt64 {
        var value: UInt64 = 0
        withUnsafeMutableBytes(of: &value) { fill($0) }
        return value
    }
}
