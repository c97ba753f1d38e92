import Foundation
import VaultCore
import VaultStore

/// A prepared statement: its name on every connection and its SQL.
struct PostgresStatement: Sendable, Hashable {
    var name: String
    var sql: String
}

/// A fixed set of connections, each owned by its own thread, serving a shared queue of work.
///
/// Async callers queue a job and wait; a connection's thread takes what is queued at once (up to
/// ``maximumTake`` reads, or up to ``maximumCommitsPerTransaction`` commits: never both, so a read does
/// not wait for a WAL flush) and sends it in libpq's pipeline mode, one round trip for all of it:
/// the record reads together in one statement (``getManyStatement``), any other read with its own sync
/// point, and the commits together in one transaction when there are several (one WAL flush for the lot;
/// each ``cardvault_commit`` call undoes only its own batch on a conflict). Libpq blocks its thread,
/// never the cooperative pool.
///
/// A broken connection is replaced (the multi-host URI and `target_session_attrs=read-write` find
/// the new primary after a failover). Its reads are sent again; its commits are resolved first
/// (``CommitProbe``): a commit found applied is answered as done, one not applied is sent again.
/// A job still unanswered after ``PostgresStoreOptions/requestTimeout`` fails `.unavailable`.
final class PostgresPool: Sendable {
    /// What a commit job can be checked by after its connection broke mid-way.
    struct CommitProbe: Sendable {
        var collection: String
        var id: String
        /// The sealed value the commit wrote there (random nonce: unique to this commit).
        var sealed: [UInt8]
    }

    enum Kind: Sendable {
        /// A statement run on its own (its own implicit transaction).
        case read
        /// A `cardvault_commit` call; may share a transaction with other commits.
        case commit(probe: CommitProbe?)
        /// A piece of work that needs a connection to itself (keyring changes, migrations).
        case session(@Sendable (PostgresConnection) throws -> PostgresRows)
    }

    /// A batch of distinct records in the plain statement's form (``PostgresRecordStore/putStatement``'s
    /// parameters, kept apart), which a take may send in one statement with the other such batches it holds.
    struct PlainBatch: Sendable {
        var collections: [String]
        var ids: [String]
        var expected: [Int64]
        var versions: [Int64]
        /// The data key version the puts are sealed under (0: no put).
        var keyVersion: Int32
        var values: [[UInt8]]
        /// Writes that must change a row (puts, and deletes with an expected version).
        var mustChange: Int64
    }

    struct Job {
        var statement: PostgresStatement
        var parameters: [PostgresValue]
        var kind: Kind
        var enqueued: Date
        var waiter: UnsafeContinuation<PostgresRows, any Error>
        /// A commit sent on a connection that broke before its answer came: it may have applied.
        var inDoubt = false
        /// The commit as a plain batch, when it may be merged with the other plain batches of its take.
        var plain: PlainBatch?
    }

    private struct Queue {
        var jobs: [Job] = []
        var closing = false
        /// Connections up now (for health and status).
        var connected = 0
        var lastFailure = ""
        /// Connection threads waiting for work now.
        var sleeping = 0
        /// A sleeping thread was signalled and has not taken the queue yet: jobs queued meanwhile wait for it
        /// (one wake-up takes them all) instead of waking another thread each.
        var signalled = false
    }

    static let maximumTake = 64
    static let maximumCommitsPerTransaction = 32

    static let begin = PostgresStatement(name: "cv_begin", sql: "BEGIN")
    static let commitTransaction = PostgresStatement(name: "cv_commit_tx", sql: "COMMIT")
    static let keyLockShared = PostgresStatement(
        name: "cv_key_lock", sql: "SELECT pg_advisory_xact_lock_shared(\(PostgresSchema.keyLock))")
    /// The SQLSTATE of ``PostgresRecordStore/putStatement`` missing a condition (`cardvault_conflict()`).
    static let conflictState = "CV001"
    static let probe = PostgresStatement(
        name: "cv_probe", sql: "SELECT value FROM cardvault_records WHERE collection = $1 AND id = $2")

    let options: PostgresStoreOptions
    /// Commit latency and outcomes, connections in use, waits, reconnections, in-doubt resolutions.
    let metrics = PostgresStoreMetrics()
    private let queue = Locked(Queue())
    private let wake = NSCondition()
    private let threads: Int
    private let stopped = NSCondition()
    private let running = Locked(0)
    /// Runs on each new connection before it takes work (session settings).
    private let setUp: @Sendable (PostgresConnection) throws -> Void

    init(
        options: PostgresStoreOptions, connections: Int, name: String,
        setUp: @escaping @Sendable (PostgresConnection) throws -> Void
    ) {
        self.options = options
        self.threads = max(1, connections)
        self.setUp = setUp
        for index in 0..<threads {
            running.withLock { $0 += 1 }
            Thread.named("cv-pg-\(name)-\(index)") { [self] in self.serve() }.start()
        }
    }

    /// Connections up now.
    var connectedCount: Int { queue.withLock { $0.connected } }

    /// Jobs waiting for a connection now.
    var queuedCount: Int { queue.withLock { $0.jobs.count } }

    /// Queues a job and waits for its rows.
    /// - Parameter plain: a commit's batch in mergeable form (``PlainBatch``); `statement` and `parameters` are
    ///   what is sent when it goes alone.
    func run(
        _ statement: PostgresStatement, _ parameters: [PostgresValue], kind: Kind = .read, plain: PlainBatch? = nil
    ) async throws -> PostgresRows {
        try await withUnsafeThrowingContinuation { (waiter: UnsafeContinuation<PostgresRows, any Error>) in
            let job = Job(
                statement: statement, parameters: parameters, kind: kind, enqueued: Date(), waiter: waiter,
                plain: plain)
            let admission = queue.withLock { queue -> Admission in
                if queue.closing { return .refused }
                queue.jobs.append(job)
                // A busy thread takes the queue when its round ends; a thread already signalled takes this job too.
                guard queue.sleeping > 0, !queue.signalled else { return .queued }
                queue.signalled = true
                return .wakeOne
            }
            if admission == .refused {
                waiter.resume(throwing: StoreError(.closed, "the store is closed"))
                return
            }
            metrics.queued(poolSize: threads)
            if admission == .wakeOne {
                wake.lock()
                wake.signal()
                wake.unlock()
            }
        }
    }

    private enum Admission {
        case refused, queued, wakeOne
    }

    /// Runs `body` on a connection of its own (one job), returning its rows.
    func session(_ body: @escaping @Sendable (PostgresConnection) throws -> PostgresRows) async throws -> PostgresRows {
        try await run(PostgresStatement(name: "", sql: ""), [], kind: .session(body))
    }

    /// Fails what is queued and stops the threads (after their current round).
    func close() {
        let left = queue.withLock { queue -> [Job] in
            queue.closing = true
            defer { queue.jobs.removeAll() }
            return queue.jobs
        }
        for job in left { job.waiter.resume(throwing: StoreError(.closed, "the store is closed")) }
        wake.lock()
        wake.broadcast()
        wake.unlock()
        stopped.lock()
        while running.withLock({ $0 }) > 0 { _ = stopped.wait(until: Date().addingTimeInterval(0.2)) }
        stopped.unlock()
    }

    // MARK: The connection threads

    private var isClosing: Bool { queue.withLock { $0.closing } }

    private func serve() {
        defer {
            running.withLock { $0 -= 1 }
            stopped.lock()
            stopped.broadcast()
            stopped.unlock()
        }
        var connection: PostgresConnection?
        var carried: [Job] = []
        var backoff = 0.05
        var hadConnection = false
        while !isClosing {
            if connection == nil {
                do {
                    let made = try PostgresConnection(uri: options.uri, applicationName: options.applicationName)
                    try setUp(made)
                    connection = made
                    queue.withLock { $0.connected += 1 }
                    if hadConnection { metrics.reconnected() }
                    hadConnection = true
                    backoff = 0.05
                } catch {
                    let text = (error as? PostgresError)?.message ?? "\(error)"
                    let first = queue.withLock { queue -> Bool in
                        defer { queue.lastFailure = text }
                        return queue.lastFailure != text
                    }
                    if first { options.logger.warning("PostgreSQL unreachable; retrying", ["error": .string(text)]) }
                    failExpired(&carried)
                    Thread.sleep(forTimeInterval: backoff)
                    backoff = min(backoff * 2, 0.5)
                    continue
                }
            }
            var jobs = carried
            carried = []
            if jobs.isEmpty { jobs = take() }
            if jobs.isEmpty { continue }
            metrics.working(true)
            defer { metrics.working(false) }
            do {
                try work(jobs, on: connection!)
            } catch let broken as BrokenConnection {
                connection = nil
                queue.withLock { $0.connected -= 1 }
                carried = broken.unanswered
                failExpired(&carried)
            } catch {
                // work() answers every job itself; only a broken connection escapes.
            }
        }
        if connection != nil { queue.withLock { $0.connected -= 1 } }
        for job in carried { job.waiter.resume(throwing: StoreError(.closed, "the store is closed")) }
    }

    /// Fails the jobs (carried or queued) older than the request timeout.
    private func failExpired(_ carried: inout [Job]) {
        let deadline = Date().addingTimeInterval(-options.requestTimeout)
        let queuedExpired = queue.withLock { queue -> [Job] in
            let expired = queue.jobs.filter { $0.enqueued < deadline }
            queue.jobs.removeAll { $0.enqueued < deadline }
            return expired
        }
        let carriedExpired = carried.filter { $0.enqueued < deadline }
        carried.removeAll { $0.enqueued < deadline }
        for job in queuedExpired + carriedExpired {
            job.waiter.resume(
                throwing: StoreError(.unavailable, "the database is unreachable; the write may not have applied"))
        }
    }

    /// Waits for work, then takes what is queued: a session job alone, or up to ``maximumTake`` reads and commits.
    private func take() -> [Job] {
        wake.lock()
        defer { wake.unlock() }
        while true {
            let taken = queue.withLock { queue -> [Job]? in
                if queue.closing { return [] }
                guard !queue.jobs.isEmpty else {
                    queue.sleeping += 1
                    return nil
                }
                queue.signalled = false
                if case .session = queue.jobs[0].kind { return [queue.jobs.removeFirst()] }
                // Reads and commits go in separate round trips: a read never waits for a commit's WAL flush.
                var taken: [Job] = []
                var commits = 0
                var index = 0
                var takesCommits: Bool?
                while index < queue.jobs.count, taken.count < Self.maximumTake {
                    let job = queue.jobs[index]
                    switch job.kind {
                    case .session:
                        index += 1
                        continue
                    case .commit:
                        if commits == Self.maximumCommitsPerTransaction || takesCommits == false {
                            index += 1
                            continue
                        }
                        takesCommits = true
                        commits += 1
                    case .read:
                        if takesCommits == true {
                            index += 1
                            continue
                        }
                        takesCommits = false
                    }
                    taken.append(queue.jobs.remove(at: index))
                }
                return taken
            }
            if let taken {
                // What was left (the other kind, a session) goes to another connection.
                let leftover = queue.withLock { queue -> Bool in
                    guard !queue.jobs.isEmpty, queue.sleeping > 0, !queue.signalled else { return false }
                    queue.signalled = true
                    return true
                }
                if leftover { wake.signal() }
                return taken
            }
            _ = wake.wait(until: Date().addingTimeInterval(0.5))
            queue.withLock { $0.sleeping -= 1 }
        }
    }

    /// Jobs left unanswered by a connection that broke.
    private struct BrokenConnection: Error {
        var unanswered: [Job]
    }

    /// Sends the jobs and answers each; throws ``BrokenConnection`` with the unanswered ones.
    private func work(_ jobs: [Job], on connection: PostgresConnection) throws {
        if jobs.count == 1, case .session(let body) = jobs[0].kind {
            do {
                let rows = try body(connection)
                jobs[0].waiter.resume(returning: rows)
            } catch let error as PostgresError where error.code == .connection {
                throw BrokenConnection(unanswered: jobs)
            } catch {
                jobs[0].waiter.resume(throwing: error)
            }
            return
        }
        // Commits that were in flight on a connection that broke: answered as done when their probe finds
        // the sealed value they wrote, sent again otherwise.
        var pending: [Job] = []
        for (index, job) in jobs.enumerated() {
            guard job.inDoubt, case .commit(let probe?) = job.kind else {
                pending.append(job)
                continue
            }
            do {
                try connection.prepare(Self.probe.name, Self.probe.sql)
                let rows = try connection.run(Self.probe.name, [.text(probe.collection), .text(probe.id)])
                if rows.rows.count == 1, rows.bytes(0, 0) == probe.sealed {
                    options.logger.notice("a commit in flight during a connection loss had applied")
                    metrics.inDoubtResolved(applied: true)
                    job.waiter.resume(returning: Self.applied)
                } else {
                    metrics.inDoubtResolved(applied: false)
                    var again = job
                    again.inDoubt = false
                    pending.append(again)
                }
            } catch let error as PostgresError where error.code == .connection {
                // Only the jobs not answered yet go on (each continuation is resumed exactly once).
                throw BrokenConnection(unanswered: pending + jobs[index...])
            } catch {
                job.waiter.resume(throwing: Self.storeError(error))
            }
        }
        let reads = pending.filter { if case .read = $0.kind { return true } else { return false } }
        let commits = pending.filter { if case .commit = $0.kind { return true } else { return false } }
        if reads.isEmpty, let merged = Self.merged(commits) {
            try workMerged(commits, merged, on: connection)
            return
        }
        try workTogether(reads: reads, commits: commits, on: connection)
    }

    /// The commits of a take as one plain statement: nil unless every one is a ``PlainBatch``, no record appears
    /// in two of them, and their puts are sealed under one data key version.
    static func merged(_ commits: [Job]) -> (statement: PostgresStatement, parameters: [PostgresValue])? {
        guard !commits.isEmpty else { return nil }
        var collections: [String] = []
        var ids: [String] = []
        var expected: [Int64] = []
        var versions: [Int64] = []
        var values: [[UInt8]] = []
        var mustChange: Int64 = 0
        var key: Int32 = 0
        var seen = Set<String>()
        for job in commits {
            guard let batch = job.plain else { return nil }
            if batch.keyVersion != 0 {
                if key == 0 {
                    key = batch.keyVersion
                } else if key != batch.keyVersion {
                    return nil
                }
            }
            if commits.count > 1 {
                // Each batch's records are distinct already; two batches naming one record go one by one.
                for (collection, id) in zip(batch.collections, batch.ids)
                where !seen.insert(collection + "\u{0}" + id).inserted {
                    return nil
                }
            }
            collections += batch.collections
            ids += batch.ids
            expected += batch.expected
            versions += batch.versions
            values += batch.values
            mustChange += batch.mustChange
        }
        let statement =
            versions.contains(0) ? PostgresRecordStore.putStatement : PostgresRecordStore.putOnlyStatement
        return (
            statement,
            [
                .textArray(collections), .textArray(ids), .int64Array(expected), .int64Array(versions), .int32(key),
                .byteaArray(values), .int64(mustChange),
            ]
        )
    }

    /// Sends a take's commits as one statement after the key lock, in one implicit transaction (the pipeline's
    /// sync point commits it: one round trip, one plan execution, one WAL flush). A missed condition, a stale key
    /// version or any other refusal applied nothing; the commits then go again one statement each
    /// (``workTogether(reads:commits:on:)``), which tells whose batch it was.
    private func workMerged(
        _ commits: [Job], _ merged: (statement: PostgresStatement, parameters: [PostgresValue]),
        on connection: PostgresConnection
    ) throws {
        do {
            try connection.prepare(Self.keyLockShared.name, Self.keyLockShared.sql)
            try connection.prepare(merged.statement.name, merged.statement.sql)
        } catch let error as PostgresError where error.code == .connection {
            throw BrokenConnection(unanswered: commits)
        } catch {
            for job in commits { job.waiter.resume(throwing: Self.storeError(error)) }
            return
        }
        let outcomes: [Result<PostgresRows, PostgresError>]
        do {
            outcomes = try connection.pipeline([
                .init(statement: Self.keyLockShared.name, parameters: [], syncAfter: false),
                .init(statement: merged.statement.name, parameters: merged.parameters, syncAfter: true),
            ])
        } catch {
            throw BrokenConnection(unanswered: commits.map(Self.markInDoubt))
        }
        switch outcomes[1] {
        case .success(let rows) where rows.int64(0, 0) == 0:
            for job in commits { job.waiter.resume(returning: Self.applied) }
            return
        case .success(let rows) where commits.count == 1:
            commits[0].waiter.resume(returning: rows)  // -1: sealed under a replaced key version, nothing written
            return
        case .success:
            break
        case .failure(let error):
            if error.code == .connection { throw BrokenConnection(unanswered: commits.map(Self.markInDoubt)) }
            if commits.count == 1, error.sqlState == Self.conflictState {
                commits[0].waiter.resume(throwing: error)  // its caller sends it through `cardvault_commit`
                return
            }
        }
        do {
            try connection.rollBackFailedTransaction()
        } catch {
            throw BrokenConnection(unanswered: commits.map(Self.markInDoubt))
        }
        try workTogether(reads: [], commits: commits, on: connection)
    }

    /// The record reads of a take (``PostgresRecordStore/getStatement``) as one statement: the ids' arrays joined
    /// with the records (nested loops over the primary key, as every statement of the pool), each row tagged with
    /// its read's position. One executor start and one implicit transaction for the take's reads instead of one each.
    static let getManyStatement = PostgresStatement(
        name: "cv_get_many",
        sql: """
            SELECT u.ordinal, r.version, r.key_version, r.value
            FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(collection, id, ordinal)
            JOIN cardvault_records r ON r.collection = u.collection AND r.id = u.id
            """)

    /// The record reads of a take that ``getManyStatement`` can do together: each job's index in `reads` and its
    /// shape (nil for a ``PostgresRecordStore/getStatement`` job, one record; for a ``getManyStatement`` job, how many
    /// its arrays hold), with the statement's parameters; nil for fewer than two jobs.
    static func mergedGets(_ reads: [Job]) -> (jobs: [Int], shapes: [Int?], parameters: [PostgresValue])? {
        var jobs: [Int] = []
        var shapes: [Int?] = []
        var collections: [String] = []
        var ids: [String] = []
        for (index, job) in reads.enumerated() where job.parameters.count == 2 {
            switch (job.parameters[0], job.parameters[1]) {
            case (.text(let collection), .text(let id)) where job.statement == PostgresRecordStore.getStatement:
                collections.append(collection)
                ids.append(id)
                shapes.append(nil)
            case (.textArray(let someCollections), .textArray(let someIds))
            where job.statement == getManyStatement && someCollections.count == someIds.count:
                collections += someCollections
                ids += someIds
                shapes.append(someIds.count)
            default:
                continue
            }
            jobs.append(index)
        }
        guard jobs.count >= 2 else { return nil }
        return (jobs, shapes, [.textArray(collections), .textArray(ids)])
    }

    /// Each record's rows from ``getManyStatement``'s rows (ordinal first, from 1), in the single read's columns
    /// (version, key version, value).
    static func splitGets(_ rows: PostgresRows, count: Int) -> [PostgresRows] {
        var split = [PostgresRows](repeating: PostgresRows(rows: [], affected: 0), count: count)
        for row in rows.rows.indices {
            guard let ordinal = rows.int64(row, 0), ordinal >= 1, ordinal <= count else { continue }
            split[Int(ordinal) - 1].rows.append(Array(rows.rows[row].dropFirst()))
        }
        return split
    }

    /// The answer of each job merged by ``mergedGets(_:)``, from the merged statement's rows: a single read's rows,
    /// or a ``getManyStatement`` job's rows numbered by the positions in its own arrays.
    static func answers(_ rows: PostgresRows, shapes: [Int?]) -> [PostgresRows] {
        let records = splitGets(rows, count: shapes.reduce(0) { $0 + ($1 ?? 1) })
        var answers: [PostgresRows] = []
        answers.reserveCapacity(shapes.count)
        var offset = 0
        for shape in shapes {
            guard let count = shape else {
                answers.append(records[offset])
                offset += 1
                continue
            }
            var own = PostgresRows(rows: [], affected: 0)
            for position in 0..<count {
                for row in records[offset + position].rows {
                    own.rows.append([PostgresValue.bigEndian(Int64(position + 1))] + row)
                }
            }
            answers.append(own)
            offset += count
        }
        return answers
    }

    /// Sends reads (record reads together in one statement, others each on its own) and commits (one statement
    /// each, in one explicit transaction) in one round trip.
    private func workTogether(reads: [Job], commits: [Job], on connection: PostgresConnection) throws {
        let pending = reads + commits
        let gets = Self.mergedGets(reads)
        let merged = Set(gets?.jobs ?? [])
        let singles = reads.indices.filter { !merged.contains($0) }
        var steps: [PostgresConnection.PipelineStep] = []
        do {
            for job in pending { try connection.prepare(job.statement.name, job.statement.sql) }
            if gets != nil { try connection.prepare(Self.getManyStatement.name, Self.getManyStatement.sql) }
            if !commits.isEmpty {
                for statement in [Self.begin, Self.keyLockShared, Self.commitTransaction] {
                    try connection.prepare(statement.name, statement.sql)
                }
            }
        } catch let error as PostgresError where error.code == .connection {
            throw BrokenConnection(unanswered: pending)
        } catch {
            for job in pending { job.waiter.resume(throwing: Self.storeError(error)) }
            return
        }
        for index in singles {
            steps.append(
                .init(statement: reads[index].statement.name, parameters: reads[index].parameters, syncAfter: true))
        }
        if let gets {
            steps.append(.init(statement: Self.getManyStatement.name, parameters: gets.parameters, syncAfter: true))
        }
        if !commits.isEmpty {
            // One transaction: the key lock taken shared once (a rotation or retirement waits for it), then the
            // batches, then COMMIT: one WAL flush for all of them.
            steps.append(.init(statement: Self.begin.name, parameters: [], syncAfter: false))
            steps.append(.init(statement: Self.keyLockShared.name, parameters: [], syncAfter: false))
            for job in commits {
                steps.append(.init(statement: job.statement.name, parameters: job.parameters, syncAfter: false))
            }
            steps.append(.init(statement: Self.commitTransaction.name, parameters: [], syncAfter: true))
        }
        let outcomes: [Result<PostgresRows, PostgresError>]
        do {
            outcomes = try connection.pipeline(steps)
        } catch {
            // Unknown outcome: reads go again; commits are checked before they go again.
            throw BrokenConnection(unanswered: reads + commits.map(Self.markInDoubt))
        }
        for (index, outcome) in zip(singles, outcomes) {
            switch outcome {
            case .success(let rows): reads[index].waiter.resume(returning: rows)
            case .failure(let error): reads[index].waiter.resume(throwing: Self.storeError(error))
            }
        }
        let readSteps = singles.count + (gets == nil ? 0 : 1)
        if let gets {
            switch outcomes[singles.count] {
            case .success(let rows):
                for (index, rows) in zip(gets.jobs, Self.answers(rows, shapes: gets.shapes)) {
                    reads[index].waiter.resume(returning: rows)
                }
            case .failure(let error):
                for index in gets.jobs { reads[index].waiter.resume(throwing: Self.storeError(error)) }
            }
        }
        guard !commits.isEmpty else { return }
        let transaction = Array(outcomes.dropFirst(readSteps))
        let calls = Array(transaction.dropFirst(2).dropLast())
        // BEGIN, the lock, the calls, COMMIT: all applied only when COMMIT succeeded.
        if case .success = transaction.last! {
            for (job, outcome) in zip(commits, calls) {
                switch outcome {
                case .success(let rows): job.waiter.resume(returning: rows)
                case .failure(let error): job.waiter.resume(throwing: Self.storeError(error))
                }
            }
            return
        }
        // Nothing applied. An explicit transaction that failed stays open (aborted) after the sync point.
        do {
            try connection.rollBackFailedTransaction()
        } catch {
            // COMMIT answered an error, so nothing should have applied; the probes check before anything goes again.
            throw BrokenConnection(unanswered: commits.map(Self.markInDoubt))
        }
        let culprit = calls.firstIndex { if case .failure = $0 { return true } else { return false } }
        var firstError: PostgresError?
        for outcome in transaction {
            if case .failure(let error) = outcome {
                firstError = error
                break
            }
        }
        if let culprit, case .failure(let error) = calls[culprit], error.sqlState == Self.conflictState {
            // A plain-SQL batch missed a condition: it goes back to its caller (which sends it through
            // `cardvault_commit` alone), the others of the transaction go again together.
            commits[culprit].waiter.resume(throwing: error)
            var others = commits
            others.remove(at: culprit)
            if !others.isEmpty { try work(others, on: connection) }
            return
        }
        if commits.count == 1, let error = firstError {
            // A deadlock, a serialization failure or a server going down applied nothing: send again.
            if error.code == .connection || error.sqlState.hasPrefix("57") {
                throw BrokenConnection(unanswered: commits.map(Self.markInDoubt))
            }
            if error.isTransient {
                requeue(commits[0])
            } else {
                commits[0].waiter.resume(throwing: Self.storeError(error))
            }
            return
        }
        // Some other failure in a shared transaction: each goes alone.
        var rest = commits[...]
        while let job = rest.first {
            rest = rest.dropFirst()
            do {
                try work([job], on: connection)
            } catch let broken as BrokenConnection {
                throw BrokenConnection(unanswered: broken.unanswered + rest)
            }
        }
    }

    /// Puts a job back at the head of the queue (it applied nothing and goes again).
    private func requeue(_ job: Job) {
        queue.withLock { $0.jobs.insert(job, at: 0) }
    }

    private static func markInDoubt(_ job: Job) -> Job {
        var job = job
        job.inDoubt = true
        return job
    }

    /// The answer of a `cardvault_commit` that applied (its integer result 0).
    static let applied = PostgresRows(rows: [[PostgresValue.bigEndian(Int32(0))]], affected: 0)

    static func storeError(_ error: any Error) -> any Error {
        guard let error = error as? PostgresError else { return error }
        switch error.code {
        case .connection: return StoreError(.unavailable, "the database is unreachable (\(error.message))")
        default:
            if error.sqlState == "54000" || error.sqlState == "22001" {
                return StoreError(.invalidArgument, "the database refused the value: \(error.message)")
            }
            return StoreError(.unavailable, "the database refused a statement: \(error.message)")
        }
    }
}
