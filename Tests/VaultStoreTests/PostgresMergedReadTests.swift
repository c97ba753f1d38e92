import Foundation
import Testing
import VaultCore
import VaultStore

@testable import VaultStorePostgres

/// Record reads taken together by a pool connection go as one statement (`cv_get_many`): each read still gets
/// its own record, nothing for an absent one, and the same record for two reads of one id.
@Suite struct PostgresMergedReadTests {
    /// Holds the pool's one connection (a session job) until `jobs` jobs are queued behind it, so that its next take
    /// holds them together; returns once the connection is held, with the session's task.
    private func holdConnection(of pool: PostgresPool, until jobs: Int) async throws -> Task<PostgresRows, any Error> {
        let holding = Locked(false)
        let hold = Task {
            try await pool.session { _ in
                holding.withLock { $0 = true }
                let deadline = Date().addingTimeInterval(10)
                while pool.queuedCount < jobs, Date() < deadline { usleep(1000) }
                return PostgresRows(rows: [], affected: 0)
            }
        }
        while !holding.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(1)) }
        return hold
    }

    @Test func readsTakenTogetherEachGetTheirOwnRecord() async throws {
        let sandbox = try PostgresSandbox(options: { PostgresStoreOptions(uri: $0, poolSize: 1) })
        let store = sandbox.store.store
        for index in 0..<48 {
            try await store.put(
                index % 2 == 0 ? "regs" : "cards", id: "r\(index)", value: [UInt8(index)], condition: .absent)
        }
        try await store.put("regs", id: "r0", value: [200], condition: .version(1))
        let reads = 128
        for _ in 0..<3 {
            // The pool's one connection is held until every read is queued, so its next takes hold 64 reads each.
            let hold = try await holdConnection(of: store.pool, until: reads)
            let found = try await withThrowingTaskGroup(of: (Int, Record?).self) { group in
                // Ids 0..<48 are present in the collection they were written to, 48..<64 absent; reads 64..<128
                // ask for the same ids in the other collection, where none is present.
                for index in 0..<reads {
                    group.addTask {
                        let id = index % 64
                        let collection = (id % 2 == 0) == (index < 64) ? "regs" : "cards"
                        return (index, try await store.get(collection, id: "r\(id)"))
                    }
                }
                return try await group.reduce(into: [Int: Record?]()) { $0[$1.0] = $1.1 }
            }
            _ = try await hold.value
            for index in 0..<reads {
                let id = index % 64
                let record = found[index] ?? nil
                if index < 48 {
                    #expect(record?.id == "r\(id)" && record?.collection == (id % 2 == 0 ? "regs" : "cards"))
                    #expect(record?.value == (id == 0 ? [200] : [UInt8(id)]) && record?.version == (id == 0 ? 2 : 1))
                } else {
                    #expect(record == nil, "read \(index) found nothing")
                }
            }
        }
    }

    /// Reads of several records (``PostgresRecordStore/get(many:)``) go in the same statement as single reads taken
    /// with them, and each gets its own records in its own order.
    @Test func manyReadsTakenWithSingleReadsGetTheirOwnRecords() async throws {
        let sandbox = try PostgresSandbox(options: { PostgresStoreOptions(uri: $0, poolSize: 1) })
        let store = sandbox.store.store
        for index in 0..<16 { try await store.put("regs", id: "r\(index)", value: [UInt8(index)], condition: .absent) }
        let jobs = 24
        let hold = try await holdConnection(of: store.pool, until: jobs)
        // Even jobs read three records (present, absent, present again); odd ones read one.
        let found = try await withThrowingTaskGroup(of: (Int, [Record?]).self) { group in
            for job in 0..<jobs {
                group.addTask {
                    let id = job % 16
                    if job % 2 == 0 {
                        let keys = [("regs", "r\(id)"), ("regs", "absent\(job)"), ("regs", "r\((id + 1) % 16)")]
                        return (job, try await store.get(many: keys.map { (collection: $0.0, id: $0.1) }))
                    }
                    return (job, [try await store.get("regs", id: "r\(id)")])
                }
            }
            return try await group.reduce(into: [Int: [Record?]]()) { $0[$1.0] = $1.1 }
        }
        _ = try await hold.value
        for job in 0..<jobs {
            let id = job % 16
            let values = (found[job] ?? []).map { $0?.value }
            if job % 2 == 0 {
                #expect(values == [[UInt8(id)], nil, [UInt8((id + 1) % 16)]], "job \(job)")
            } else {
                #expect(values == [[UInt8(id)]], "job \(job)")
            }
        }
    }
}
