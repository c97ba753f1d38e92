public import Payments
public import VaultCore
public import VaultCrypto
public import VaultStore

extension PaymentsEnvironment {
    /// The merchant API's environment for a test: an in-memory store unless one is given, a manual clock, fresh
    /// per-test fingerprint keys, a fresh random pool (or the seeded source given), and the public URL the
    /// in-process routers answer for.
    public static func testing(
        store: any RecordStore = InMemoryRecordStore(), clock: any WallClock = ManualClock(),
        random: any RandomSource = RandomPool(), publicBaseURL: String = "http://127.0.0.1:9999",
        configuration: PaymentsConfiguration? = nil, logger: Logger = .disabled
    ) -> PaymentsEnvironment {
        PaymentsEnvironment(
            store: store, clock: clock, random: random, fingerprintKeys: DerivedFingerprintKeys(secret: .random()),
            configuration: configuration ?? PaymentsConfiguration(publicBaseURL: publicBaseURL), logger: logger)
    }
}

/// A reproducible ``RandomSource`` (SplitMix64 from a seed) for tests that compare identifiers across runs. Its
/// bytes are predictable by design: never let it near a key or a secret outside tests.
public final class SeededRandom: RandomSource {
    private let state: Locked<UInt64>

    public init(seed: UInt64) { state = Locked(seed) }

    public func fill(_ destination: UnsafeMutableRawBufferPointer) {
        state.withLock { state in
            var offset = 0
            while offset < destination.count {
                state &+= 0x9E37_79B9_7F4A_7C15
                var mixed = state
                mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
                mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
                mixed ^= mixed >> 31
                for shift in stride(from: 0, to: 64, by: 8) where offset < destination.count {
                    destination[offset] = UInt8(truncatingIfNeeded: mixed >> UInt64(shift))
                    offset += 1
                }
            }
        }
    }
}
