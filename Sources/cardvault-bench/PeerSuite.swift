import Foundation

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
                    name: "tokenize + store, \($0) conns", unit: "cards/s", subjectNote: subjectNotBuilt,
                    anchorNote: "failed: \(error)")
            }
        }
        defer { cluster.stop() }
        notes.append(
            "Peer: PostgreSQL 15 in a temporary cluster (\(cluster.directory)), fsync on, synchronous_commit on, "
                + "Unix socket; pgbench -M prepared runs bench/peer/tokenize.sql: gen_random_bytes(16) token, "
                + "hmac(pan, key, 'sha256') fingerprint, pgp_sym_encrypt (AES-256, MDC, s2k-mode=1) of the 100-byte "
                + "record, INSERT into a table with primary key and fingerprint index.")
        notes.append("CardVault side: tokenize (VaultCrypto) + durable put (VaultStore file store) from N concurrent "
            + "tasks; not available until the encrypted file store lands.")
        let keyBytes = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let hex = keyBytes.map { byte in String(byte >> 4, radix: 16) + String(byte & 0xF, radix: 16) }.joined()
        let variables = ["fkey": hex, "dkey": String(hex.reversed())]
        var comparisons: [Comparison] = []
        for clients in Self.clientCounts {
            let load = PgbenchLoad(
                cluster: cluster, script: context.benchDirectory + "/peer/tokenize.sql", clients: clients,
                variables: variables)
            comparisons.append(
                context.compare(
                    "tokenize + store, \(clients) conn\(clients == 1 ? "" : "s")", unit: "cards/s",
                    subject: .unavailable(subjectNotBuilt),
                    anchor: .measured(Workload(label: "PostgreSQL + pgcrypto (pgbench)") { try load.run(seconds: $0) }),
                    plan: context.loadPlan,
                    target: { Target(goal: "≥ 5x peer", met: $0.ratio.map { $0 >= 5 }) }))
        }
        return comparisons
    }
}
