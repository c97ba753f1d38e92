import Foundation
public import VaultCore
import VaultCrypto

/// Leadership of background jobs through PostgreSQL session advisory locks: one lock per job name, taken
/// with `pg_try_advisory_lock` on a connection of its own and kept between rounds, so the daemon that
/// leads a job keeps it. When that daemon dies (or its connection breaks) the server releases its locks
/// and the next daemon to try takes over, within one round interval.
public final class AdvisoryLockLeadership: Leadership {
    private let pool: PostgresPool
    private let logger: Logger
    /// The locks held, by the connection generation they were taken on.
    private let held = Locked<Set<Int64>>([])
    /// Whether this process led each job at its last round (for `/metrics`).
    private let leading = Locked<[String: Bool]>([:])

    public init(options: PostgresStoreOptions) {
        var options = options
        options.applicationName = "cardvault-leadership"
        // A dead connection must not make a round wait long: leadership rather moves on.
        options.requestTimeout = 5
        self.logger = options.logger
        self.pool = PostgresPool(options: options, connections: 1, name: "leader") { _ in }
    }

    /// Releases every lock (the session ends).
    public func close() { pool.close() }

    /// The lock key of a job: the first 8 bytes of HMAC-SHA256 over its name (a fixed, public key).
    static func lockKey(_ job: String) -> Int64 {
        let mac = HMACSHA256.authenticationCode(
            for: Array(("cardvault job " + job).utf8),
            using: SymmetricKey(copying: Array("cardvault leadership v1".utf8)))
        return mac.prefix(8).reduce(Int64(0)) { ($0 << 8) | Int64($1) } & Int64.max
    }

    /// Whether this process leads `job` now, taking the lead when it is free.
    public func lead(_ job: String) async throws -> Bool {
        let key = Self.lockKey(job)
        let rows = try await pool.session { [held] connection in
            // A new connection holds nothing: what was held went with the old one.
            if connection.prepared.isEmpty { held.withLock { $0.removeAll() } }
            try connection.prepare("cv_lead", "SELECT pg_try_advisory_lock($1)")
            try connection.prepare(
                "cv_held",
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted AND ((classid::bigint << 32) | objid::bigint) = $1"
            )
            if held.withLock({ $0.contains(key) }) {
                // Still ours if the session is the same one (checked by asking the server).
                let still = try connection.run("cv_held", [.int64(key)])
                if still.int64(0, 0) ?? 0 > 0 { return PostgresRows(rows: [[[1]]], affected: 0) }
                held.withLock { _ = $0.remove(key) }
            }
            let taken = try connection.run("cv_lead", [.int64(key)])
            if taken.rows.first?[0] == [1] {
                held.withLock { _ = $0.insert(key) }
                return PostgresRows(rows: [[[1]]], affected: 0)
            }
            return PostgresRows(rows: [[[0]]], affected: 0)
        }
        let leads = rows.rows.first?[0] == [1]
        return leads
    }

    @discardableResult
    public func runIfLeader(_ job: String, _ round: @Sendable () async throws -> Void) async throws -> Bool {
        let wasLeading = held.withLock { $0.contains(Self.lockKey(job)) }
        let leads: Bool
        do {
            leads = try await lead(job)
        } catch {
            leading.withLock { $0[job] = false }
            throw error
        }
        leading.withLock { $0[job] = leads }
        guard leads else {
            if wasLeading { logger.notice("background job led elsewhere now", ["job": .string(job)]) }
            return false
        }
        if !wasLeading { logger.notice("leading background job", ["job": .string(job)]) }
        try await round()
        return true
    }

    /// Prometheus text: `cardvault_background_job_leader{job}`, 1 for each job this daemon led at its last round,
    /// 0 for those another daemon leads (job names are the daemon's fixed ones).
    public func metricsText() -> String {
        let jobs = leading.withLock { $0 }
        var text = "# HELP cardvault_background_job_leader 1 while this daemon leads the background job (PostgreSQL "
        text += "advisory lock), 0 while another does.\n# TYPE cardvault_background_job_leader gauge\n"
        for (job, leads) in jobs.sorted(by: { $0.key < $1.key }) {
            text += "cardvault_background_job_leader{job=\"" + job + "\"} " + (leads ? "1" : "0") + "\n"
        }
        return text
    }
}
