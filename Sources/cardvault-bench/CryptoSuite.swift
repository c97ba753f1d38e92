import Foundation
import VaultCore
import VaultCrypto

/// `crypto`: tokenize and detokenize on one core, CardVault's VaultCrypto against the C baseline
/// doing the same work with OpenSSL directly (`bench/c/crypto_baseline.c`).
struct CryptoSuite: BenchSuite {
    let name = "crypto"
    let title = "tokenize (token + HMAC fingerprint + AES-256-GCM seal) and detokenize, per core"

    /// The shape of the C baseline's JSON line.
    private struct BaselineRun: Decodable {
        var ops_per_second: Double
    }

    func run(in context: SuiteContext, notes: inout [String]) throws -> [Comparison] {
        notes.append(
            "tokenize = 16-byte token from a random pool + HMAC-SHA256 fingerprint of the PAN + AES-256-GCM seal of a "
                + "100-byte card record (AAD = token || key version); detokenize = open + fingerprint check in "
                + "constant time. One thread each side (per-core figures).")
        notes.append(
            "CardVault side: VaultCrypto's public API as the store's write path calls it (RandomPool.fill, "
                + "HMACSHA256 into a buffer, AESGCM.sealDetached with the AAD on the stack, AESGCM.open, "
                + "ConstantTime.equals), writing into buffers made once per run as the C side writes into its struct; "
                + "\"tokenize (array API)\" is the same work through the array-returning calls (token, fingerprint and "
                + "sealed box each a new [UInt8]), against the same C line; switches to the domain tokenizer once one "
                + "exists.")
        let baseline = BaselineProgram.named("crypto_baseline", in: context)
        var comparisons: [Comparison] = []
        for (line, work, shape) in [
            ("tokenize", "tokenize", VaultCryptoWorkload.Shape.buffers),
            ("tokenize (array API)", "tokenize", .arrays),
            ("detokenize", "detokenize", .detokenize),
        ] {
            let anchor: Side
            switch baseline {
            case .success(let program):
                anchor = .measured(
                    Workload(label: "C + OpenSSL (crypto_baseline)") { seconds in
                        let run = try program.run([work, String(seconds)], as: BaselineRun.self)
                        return Sample(rate: run.ops_per_second)
                    })
            case .failure(let failure):
                anchor = .unavailable(failure.message)
            }
            let subject = Side.measured(VaultCryptoWorkload.make(shape))
            comparisons.append(
                context.compare(
                    line, unit: "ops/s", subject: subject, anchor: anchor, plan: context.shortPlan,
                    target: shape == .buffers ? { Target(goal: "≥ 0.8x C", met: $0.ratio.map { $0 >= 0.8 }) } : nil
                ))
        }
        return comparisons
    }
}

/// CardVault's side of the crypto suite: the same work as the C baseline through VaultCrypto.
enum VaultCryptoWorkload {
    static let keyVersion: UInt32 = 1

    /// Which calls a workload makes.
    enum Shape {
        /// Tokenize into buffers made once per run (the store's write path: `fill`, MAC `into:`, `sealDetached`).
        case buffers
        /// Tokenize through the array-returning calls (`bytes(count:)`, the MAC as `[UInt8]`, `seal`).
        case arrays
        /// Detokenize 1,024 records sealed beforehand.
        case detokenize
    }

    /// A tokenized card as the store would keep it.
    struct Tokenized {
        var token: [UInt8]
        var fingerprint: [UInt8]
        /// `nonce || ciphertext || tag`.
        var sealed: [UInt8]

        /// Zeroed buffers the size of one tokenized card record.
        static func empty() -> Tokenized {
            Tokenized(
                token: [UInt8](repeating: 0, count: 16),
                fingerprint: [UInt8](repeating: 0, count: HMACSHA256.byteCount),
                sealed: [UInt8](repeating: 0, count: CardRecordSample.length + AESGCM.overhead))
        }
    }

    /// A workload running `shape` on this thread.
    static func make(_ shape: Shape) -> Workload {
        Workload(label: "CardVault (VaultCrypto)") { seconds in
            let pool = RandomPool()
            let dataKey = SymmetricKey.random(using: pool)
            let fingerprintKey = SymmetricKey.random(using: pool)
            let records = (0..<CardRecordSample.count).map(CardRecordSample.record)
            switch shape {
            case .detokenize:
                let set = try (0..<1024).map {
                    try tokenizeToArrays(records[$0 % records.count], pool, dataKey, fingerprintKey)
                }
                return try timed(seconds) { n in
                    try Self.detokenize(set[n % set.count], dataKey, fingerprintKey)
                }
            case .arrays:
                return try timed(seconds) { n in
                    let card = try tokenizeToArrays(records[n % records.count], pool, dataKey, fingerprintKey)
                    return Int(card.sealed[card.sealed.count - 1])
                }
            case .buffers:
                var card = Tokenized.empty()
                let sample = try timed(seconds) { n in
                    try tokenize(records[n % records.count], pool, dataKey, fingerprintKey, into: &card)
                    return Int(card.sealed[card.sealed.count - 1])
                }
                // The last card must open and match its fingerprint, or the loop did not do the work.
                let index = records.firstIndex { record in
                    record.withUnsafeBytes { bytes in
                        HMACSHA256.authenticationCode(for: pan(of: bytes), using: fingerprintKey) == card.fingerprint
                    }
                }
                guard index != nil, try detokenize(card, dataKey, fingerprintKey) >= 0 else {
                    throw BenchFailure("the last tokenized card does not open to a sample record")
                }
                return sample
            }
        }
    }

    /// Tokenize into `card`'s buffers: random token, fingerprint, seal (fresh random nonce) with the token and key
    /// version bound as AAD. Allocates nothing.
    static func tokenize(
        _ record: [UInt8], _ pool: RandomPool, _ dataKey: SymmetricKey, _ fingerprintKey: SymmetricKey,
        into card: inout Tokenized
    ) throws {
        // AAD = token (16) || key version (4, big endian), on the stack.
        var aad: (UInt64, UInt64, UInt32) = (0, 0, keyVersion.bigEndian)
        try record.withUnsafeBytes { plain in
            withUnsafeMutableBytes(of: &aad) { aadBytes in
                card.token.withUnsafeMutableBytes { token in
                    pool.fill(token)
                    aadBytes.copyMemory(from: UnsafeRawBufferPointer(token))
                }
            }
            card.fingerprint.withUnsafeMutableBytes { out in
                _ = HMACSHA256.authenticationCode(for: pan(of: plain), using: fingerprintKey, into: out)
            }
            try withUnsafeBytes(of: &aad) { aadBytes in
                try card.sealed.withUnsafeMutableBytes { box in
                    let nonce = UnsafeMutableRawBufferPointer(rebasing: box[0..<AESGCM.nonceSize])
                    pool.fill(nonce)
                    let tagStart = AESGCM.nonceSize + plain.count
                    try AESGCM.sealDetached(
                        plain, key: dataKey, nonce: UnsafeRawBufferPointer(nonce),
                        aad: UnsafeRawBufferPointer(rebasing: aadBytes[0..<20]),
                        ciphertext: UnsafeMutableRawBufferPointer(rebasing: box[AESGCM.nonceSize..<tagStart]),
                        tag: UnsafeMutableRawBufferPointer(rebasing: box[tagStart..<tagStart + AESGCM.tagSize]))
                }
            }
        }
    }

    /// Tokenize through the array-returning calls: a new token, fingerprint and sealed box per card.
    static func tokenizeToArrays(
        _ record: [UInt8], _ pool: RandomPool, _ dataKey: SymmetricKey, _ fingerprintKey: SymmetricKey
    ) throws -> Tokenized {
        let token = pool.bytes(count: 16)
        let fingerprint = record.withUnsafeBytes {
            HMACSHA256.authenticationCode(for: pan(of: $0), using: fingerprintKey)
        }
        let sealed = try AESGCM.seal(record, using: dataKey, authenticating: aad(token), random: pool)
        return Tokenized(token: token, fingerprint: fingerprint, sealed: sealed)
    }

    /// Detokenize: open, then check the PAN's fingerprint against the stored one in constant time.
    static func detokenize(_ card: Tokenized, _ dataKey: SymmetricKey, _ fingerprintKey: SymmetricKey) throws -> Int {
        let plain = try AESGCM.open(card.sealed, using: dataKey, authenticating: aad(card.token))
        return try plain.withUnsafeBytes { bytes in
            let fingerprint = HMACSHA256.authenticationCode(for: pan(of: bytes), using: fingerprintKey)
            guard ConstantTime.equals(fingerprint, card.fingerprint) else {
                throw BenchFailure("fingerprint mismatch after open")
            }
            return Int(bytes[CardRecordSample.panOffset + CardRecordSample.panLength - 1])
        }
    }

    /// The PAN's bytes inside a card record.
    private static func pan(of record: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(
            rebasing: record[CardRecordSample.panOffset..<CardRecordSample.panOffset + CardRecordSample.panLength])
    }

    private static func aad(_ token: [UInt8]) -> [UInt8] {
        var aad = [UInt8]()
        aad.reserveCapacity(token.count + 4)
        aad.append(contentsOf: token)
        withUnsafeBytes(of: keyVersion.bigEndian) { aad.append(contentsOf: $0) }
        return aad
    }
}

/// Runs `operation` (given the iteration number) in batches of 256 until `seconds` have passed;
/// returns the rate. The results are folded into a sink so the work cannot be optimised away.
func timed(_ seconds: Double, _ operation: (Int) throws -> Int) throws -> Sample {
    var sink = 0
    var count = 0
    let clock = ContinuousClock()
    let start = clock.now
    let limit = Duration.nanoseconds(Int64(seconds * 1e9))
    var elapsed = Duration.zero
    repeat {
        for index in 0..<256 {
            sink &+= try operation(count &+ index)
        }
        count += 256
        elapsed = clock.now - start
    } while elapsed < limit
    blackHole(sink)
    let secondsTaken = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return Sample(rate: Double(count) / secondsTaken)
}

/// Keeps a value alive as far as the optimiser can tell.
@inline(never)
func blackHole(_ value: Int) {
    if value == Int.min { print("") }
}
