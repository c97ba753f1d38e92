import Foundation
import Synchronization
import VaultCore
import VaultCrypto
import VaultStore

/// `peer`: the same tokenize-and-store work done by PostgreSQL 15 with pgcrypto (what many teams
/// build instead), at 1, 16 and 64 connections, against CardVault doing it with its own crypto and
/// durable store.
struct PeerSuite: BenchSuite {
    let name = "peer"
    let title = "tokenize-and-store: CardVault vs PostgreSQL 15 + pgcrypto (synchronous_commit on)"

    static let clientCounts = [1, 16, 64]

    func run(in context: SuiteContext, notes: inout [String]) throws -> [Comparison] {
        let cluster: PostgresCluster
        do {
            cluster = try PostgresCluster(context: context, schema: context.benchDirectory + "/peer/schema.sql")
        } catch {
            notes.append("PostgreSQL did not start: \(error)")
            return Self.clientCounts.map {
                Comparison(
                    name: "tokenize + store in process (no HTTP), \($0) conns", unit: "cards/s",
                    subjectNote: subjectNotBuilt,
                    anchorNote: "failed: \(error)")
            }
        }
        defer { cluster.stop() }
        notes.append(
            "Peer: PostgreSQL 15 in a temporary cluster (\(cluster.directory)), fsync on, synchronous_commit on, "
                + "Unix socket; pgbench -M prepared runs bench/peer/tokenize.sql: gen_random_bytes(16) token, "
                + "hmac(pan, key, 'sha256') fingerprint, pgp_sym_encrypt (AES-256, MDC, s2k-mode=1) of the 100-byte "
                + "record, INSERT into a table with primary key and fingerprint index.")
        notes.append(
            "CardVault side: the same work through the store directly, in process, from N concurrent tasks (N = "
                + "the peer's connections): a 16-byte token from VaultCrypto's RandomPool, HMAC-SHA256 fingerprint "
                + "of the PAN, then one atomic durable commit of the 100-byte card record under the token (sealed "
                + "with AES-256-GCM by EncryptedFileStore) and a fingerprint index entry (fingerprint:token, also "
                + "sealed), acknowledged after fdatasync (group commit) as PostgreSQL acknowledges after its WAL "
                + "fsync. Comparable work: same crypto primitives, the same two lookups (by token, by fingerprint), "
                + "durable before the answer. Not included on CardVault's side: a client protocol hop (pgbench "
                + "talks to PostgreSQL over a Unix socket); the http suite's tokenization line is CardVault with "
                + "its HTTP hop, registration check and profiling record included.")
        let keyBytes = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let hex = keyBytes.map { byte in String(byte >> 4, radix: 16) + String(byte & 0xF, radix: 16) }.joined()
        let variables = ["fkey": hex, "dkey": String(hex.reversed())]
        let keys = try context.temporaryDirectory("peer-keys")
        _ = try KeyRing.createMasterKey(keysDirectory: keys)
        let storeDirectory = try context.temporaryDirectory("peer-store")
        var comparisons: [Comparison] = []
        for clients in Self.clientCounts {
            let load = PgbenchLoad(
                cluster: cluster, script: context.benchDirectory + "/peer/tokenize.sql", clients: clients,
                variables: variables)
            comparisons.append(
                context.compare(
                    "tokenize + store in process (no HTTP), \(clients) conn\(clients == 1 ? "" : "s")", unit: "cards/s",
                    subject: .measured(
                        CardVaultPeerWork.workload(tasks: clients, directory: storeDirectory, keysDirectory: keys)),
                    anchor: .measured(Workload(label: "PostgreSQL + pgcrypto (pgbench)") { try load.run(seconds: $0) }),
                    plan: context.loadPlan,
                    target: { Target(goal: "≥ 5x peer", met: $0.ratio.map { $0 >= 5 }) }))
        }
        return comparisons
    }
}

/// CardVault's side of the peer suite: tokenize and store durably through the encrypted file store.
enum CardVaultPeerWork {
    static func workload(tasks: Int, directory: String, keysDirectory: String) -> Workload {
        Workload(label: "CardVault (VaultCrypto + EncryptedFileStore)") { seconds in
            let store = try EncryptedFileStore.open(directory: directory, keysDirectory: keysDirectory)
            defer { store.close() }
            let pool = RandomPool()
            let fingerprintKey = SymmetricKey.random(using: pool)
            let records = (0..<CardRecordSample.count).map(CardRecordSample.record)
            return try measureConcurrently(tasks: tasks, seconds: seconds) { task, iteration in
                let record = records[(task + iteration * tasks) % records.count]
                let token = hex(pool.bytes(count: 16))
                let pan = Array(
                    record[CardRecordSample.panOffset..<CardRecordSample.panOffset + CardRecordSample.panLength])
                let fingerprint = hex(HMACSHA256.authenticationCode(for: pan, using: fingerprintKey))
                try await store.commit([
                    .put(collection: "vault-cards", id: token, value: record, condition: .absent),
                    .put(
                        collection: "vault-fingerprints", id: fingerprint + ":" + token, value: Array(token.utf8),
                        condition: .absent),
                ])
            }
        }
    }

    private static let digits = Array("0123456789abcdef".utf8)

    /// Lower-case hex of `bytes`.
    static func hex(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
