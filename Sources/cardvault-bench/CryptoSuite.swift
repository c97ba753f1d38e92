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
            "CardVault side: VaultCrypto's public API as domain code calls it (RandomPool, HMACSHA256, AESGCM.seal/open, "
                + "ConstantTime.equals); switches to the domain tokenizer once one exists.")
        let baseline = BaselineProgram.named("crypto_baseline", in: context)
        var comparisons: [Comparison] = []
        for work in ["tokenize", "detokenize"] {
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
            let subject = Side.measured(VaultCryptoWorkload.make(detokenize: work == "detokenize"))
            comparisons.append(
                context.compare(
                    work, unit: "ops/s", subject: subject, anchor: anchor, plan: context.shortPlan,
                    target: work == "tokenize" ? { Target(goal: "≥ 0.8x C", met: $0.ratio.map { $0 >= 0.8 }) } : nil
                ))
        }
        return comparisons
    }
}

/// CardVault's side of the crypto suite: the same work as the C baseline through VaultCrypto.
enum VaultCryptoWorkload {
    static let keyVersion: UInt32 = 1

    /// A tokenized card as the store would keep it.
    struct Tokenized {
        var token: [UInt8]
        var fingerprint: [UInt8]
        var sealed: [UInt8]
    }

    /// A workload running tokenize (or detokenize over 1,024 pre-sealed records) on this thread.
    static func make(detokenize: Bool) -> Workload {
        Workload(label: "CardVault (VaultCrypto)") { seconds in
            let pool = RandomPool()
            let dataKey = SymmetricKey.random(using: pool)
            let fingerprintKey = SymmetricKey.random(using: pool)
            let records = (0..<CardRecordSample.count).map(CardRecordSample.record)
            if detokenize {
                let set = try (0..<1024).map {
                    try tokenize(records[$0 % records.count], pool, dataKey, fingerprintKey)
                }
                return try timed(seconds) { n in
                    try Self.detokenize(set[n % set.count], dataKey, fingerprintKey)
                }
            }
            return try timed(seconds) { n in
                let card = try tokenize(records[n % records.count], pool, dataKey, fingerprintKey)
                return Int(card.sealed[card.sealed.count - 1])
            }
        }
    }

    /// Tokenize: random token, fingerprint, seal with the token and key version bound as AAD.
    static func tokenize(
        _ record: [UInt8], _ pool: RandomPool, _ dataKey: SymmetricKey, _ fingerprintKey: SymmetricKey
    ) throws -> Tokenized {
        let token = pool.bytes(count: 16)
        let pan = record[CardRecordSample.panOffset..<CardRecordSample.panOffset + CardRecordSample.panLength]
        let fingerprint = HMACSHA256.authenticationCode(for: Array(pan), using: fingerprintKey)
        let sealed = try AESGCM.seal(record, using: dataKey, authenticating: aad(token), random: pool)
        return Tokenized(token: token, fingerprint: fingerprint, sealed: sealed)
    }

    /// Detokenize: open, then check the PAN's fingerprint against the stored one in constant time.
    static func detokenize(_ card: Tokenized, _ dataKey: SymmetricKey, _ fingerprintKey: SymmetricKey) throws -> Int {
        let plain = try AESGCM.open(card.sealed, using: dataKey, authenticating: aad(card.token))
        return try plain.withUnsafeBytes { bytes in
            let pan = UnsafeRawBufferPointer(
                rebasing: bytes[CardRecordSample.panOffset..<CardRecordSample.panOffset + CardRecordSample.panLength])
            let fingerprint = HMACSHA256.authenticationCode(for: pan, using: fingerprintKey)
            guard ConstantTime.equals(fingerprint, card.fingerprint) else {
                throw BenchFailure("fingerprint mismatch after open")
            }
            return Int(bytes[CardRecordSample.panOffset + CardRecordSample.panLength - 1])
        }
    }

    private static func aad(_ token: [UInt8]) -> [UInt8] {
        var aad = token
        aad.reserveCapacity(token.count + 4)
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
