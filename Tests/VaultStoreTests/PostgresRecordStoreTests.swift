import Foundation
import Testing
import VaultCore
import VaultCrypto
import VaultStore
import VaultStorePostgres

/// What the PostgreSQL store adds to the contract: several daemons on one database (keys, leadership), the
/// schema check, and what the database holds.
@Suite struct PostgresRecordStoreTests {
    private func schema(_ url: String) -> String { url.components(separatedBy: "search_path%3D").last! }

    @Test func aRotationThroughOneDaemonIsSeenByTheOtherWithinASecondAndRetiredKeysAreNeverUsed() async throws {
        let sandbox = try PostgresSandbox()
        let a = sandbox.store
        let b = try sandbox.openAnother()
        try await a.put("cards", id: "c1", value: [1])
        #expect(b.store.keyRing.currentVersion == 1)
        let rotated = try await a.store.rotateDataKey()
        #expect(rotated.version == 2)
        // B's next write seals under version 2 at once (the commit refuses the stale version).
        try await b.put("cards", id: "c2", value: [2])
        #expect(b.store.keyRing.currentVersion == 2)
        // Version 1 still holds c1: retiring it is refused until a rewrap moves it.
        await #expect(throws: KeyRingError(.versionInUse, "")) { try await b.store.retireDataKey(version: 1) }
        let report = try await b.store.rewrap()
        #expect(report.moved == 1 && report.remaining == 0)
        try await b.store.retireDataKey(version: 1)
        // A sees the retirement within a second (its watcher), and every record still reads on both.
        let deadline = Date().addingTimeInterval(1)
        while a.store.keyRing.dataKeys.first(where: { $0.version == 1 })?.retired != true, Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(a.store.keyRing.dataKeys.first { $0.version == 1 }?.retired == true)
        #expect(try await a.get("cards", id: "c1")?.value == [1])
        #expect(try await a.get("cards", id: "c2")?.value == [2])
        try await a.put("cards", id: "c3", value: [3])
        let cluster = try #require(PostgresTestCluster.shared)
        let versions = try cluster.psql(
            "SELECT DISTINCT key_version FROM \(schema(sandbox.url)).cardvault_records ORDER BY 1")
        #expect(versions.trimmingCharacters(in: .whitespacesAndNewlines) == "2")
    }

    @Test func aValueCopiedOntoAnotherIdFailsAuthentication() async throws {
        let sandbox = try PostgresSandbox()
        try await sandbox.store.put("cards", id: "alice", value: Array("alice's card".utf8))
        try await sandbox.store.put("cards", id: "mallory", value: Array("mallory's card".utf8))
        let cluster = try #require(PostgresTestCluster.shared)
        let table = schema(sandbox.url) + ".cardvault_records"
        try cluster.psql(
            "UPDATE \(table) SET value = (SELECT value FROM \(table) WHERE id = 'alice') WHERE id = 'mallory'")
        await #expect(throws: StoreError(.corrupted, "")) { try await sandbox.store.get("cards", id: "mallory") }
        let report = try await sandbox.store.store.verify()
        #expect(report.checked == 2 && report.failures.map(\.id) == ["mallory"])
    }

    @Test func theDatabaseHoldsNoPlaintextValue() async throws {
        let sandbox = try PostgresSandbox()
        let secret = "4970101234567897|123"
        try await sandbox.store.put("card-numbers", id: "c1", value: Array(secret.utf8))
        let cluster = try #require(PostgresTestCluster.shared)
        let rows = try cluster.psql(
            "SELECT encode(value, 'escape') || encode(value, 'hex') FROM \(schema(sandbox.url)).cardvault_records")
        #expect(!rows.contains("4970101234567897"))
        #expect(!rows.contains(Array(secret.utf8).map { String(format: "%02x", $0) }.joined()))
    }

    @Test func anOldOrMissingSchemaIsRefusedWithWhatToRun() async throws {
        let cluster = try #require(PostgresTestCluster.shared)
        let url = try cluster.freshURL()
        let sandbox = try StoreSandbox()
        do {
            _ = try PostgresRecordStore.open(options: PostgresStoreOptions(uri: url), keysDirectory: sandbox.keys)
            Issue.record("a database without schema was accepted")
        } catch let error as PostgresError {
            #expect(error.code == .schema && error.message.contains("cardvault db migrate"))
        }
        let first = try PostgresRecordStore.migrate(uri: url)
        #expect(first.from == 0 && first.to == PostgresSchema.currentVersion)
        let again = try PostgresRecordStore.migrate(uri: url)
        #expect(again.from == PostgresSchema.currentVersion)
        try cluster.psql("UPDATE \(schema(url)).cardvault_schema SET version = 0")
        do {
            _ = try PostgresRecordStore.open(options: PostgresStoreOptions(uri: url), keysDirectory: sandbox.keys)
            Issue.record("an old schema was accepted")
        } catch let error as PostgresError {
            #expect(error.code == .schema && error.message.contains("cardvault db migrate"))
        }
    }

    @Test func aVersion2DatabaseMigratesToOneIndexOnTheRecordsAndKeepsThem() async throws {
        let sandbox = try PostgresSandbox()
        try await sandbox.store.put("cards", id: "c1", value: [1])
        let cluster = try #require(PostgresTestCluster.shared)
        let name = schema(sandbox.url)
        let indexes =
            "SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes"
            + " WHERE schemaname = '\(name)' AND tablename = 'cardvault_records'"
        let options =
            "SELECT coalesce(array_to_string(reloptions, ','), '') FROM pg_class"
            + " WHERE oid = '\(name).cardvault_records'::regclass"
        #expect(try cluster.psql(indexes).trimmingCharacters(in: .whitespacesAndNewlines) == "cardvault_records_pkey")
        #expect(try cluster.psql(options).trimmingCharacters(in: .whitespacesAndNewlines) == "fillfactor=90")
        // Back to what version 2 made, then forward again.
        try cluster.psql(
            """
            CREATE INDEX cardvault_records_key_version ON \(name).cardvault_records (key_version);
            ALTER TABLE \(name).cardvault_records RESET (fillfactor);
            UPDATE \(name).cardvault_schema SET version = 2;
            """)
        let upgrade = try PostgresRecordStore.migrate(uri: sandbox.url)
        #expect(upgrade.from == 2 && upgrade.to == PostgresSchema.currentVersion)
        #expect(try cluster.psql(indexes).trimmingCharacters(in: .whitespacesAndNewlines) == "cardvault_records_pkey")
        #expect(try cluster.psql(options).trimmingCharacters(in: .whitespacesAndNewlines) == "fillfactor=90")
        #expect(try await sandbox.store.get("cards", id: "c1")?.value == [1])
        try await sandbox.store.put("cards", id: "c2", value: [2])
        #expect(try await sandbox.store.get("cards", id: "c2")?.value == [2])
    }

    /// Version 4: the custody record every daemon reads before it has a key, one row, replaced whole.
    @Test func theCustodyRecordIsOneRowSharedByEveryDaemon() async throws {
        let sandbox = try PostgresSandbox()
        let records = PostgresCustodyRecords(uri: sandbox.url)
        #expect(try records.read() == nil)
        let first = KeyCustody(provider: .shares, threshold: 2, shares: 3, masterCheckValue: "abcdef")
        try records.write(first)
        #expect(try PostgresCustodyRecords(uri: sandbox.url).read() == first)
        let second = KeyCustody(provider: .shares, threshold: 3, shares: 5, masterCheckValue: "abcdef")
        try records.write(second)
        #expect(try records.read() == second)
    }

    @Test func aDaemonWithAnotherMasterKeyIsRefused() async throws {
        let sandbox = try PostgresSandbox()
        let other = try StoreSandbox()
        #expect(throws: KeyRingError(.wrongMasterKey, "")) {
            try PostgresRecordStore.open(options: PostgresStoreOptions(uri: sandbox.url), keysDirectory: other.keys)
        }
    }

    @Test func backgroundWorkRunsOnOneDaemonAtATimeAndMovesOnWhenItsLeaderGoes() async throws {
        let sandbox = try PostgresSandbox()
        let first = AdvisoryLockLeadership(options: PostgresStoreOptions(uri: sandbox.url))
        let second = AdvisoryLockLeadership(options: PostgresStoreOptions(uri: sandbox.url))
        defer { second.close() }
        let runs = Locked<[String]>([])
        for _ in 0..<3 {
            try await first.runIfLeader("sweeper") { runs.withLock { $0.append("first") } }
            try await second.runIfLeader("sweeper") { runs.withLock { $0.append("second") } }
        }
        #expect(runs.withLock { $0 } == ["first", "first", "first"])
        // Another job may be led elsewhere.
        #expect(try await second.runIfLeader("expiries") {})
        first.close()  // the leader's session ends (as when its daemon dies)
        // The server releases the lock once it sees the session gone; the next round (within 2 s here) takes it.
        var took = false
        for _ in 0..<20 where !took {
            took = try await second.runIfLeader("sweeper") { runs.withLock { $0.append("second") } }
            if !took { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(took && runs.withLock { $0 }.last == "second")
    }

    @Test func concurrentCommitsFromTwoDaemonsOnOneRecordApplyOnce() async throws {
        let sandbox = try PostgresSandbox()
        let a = sandbox.store
        let b = try sandbox.openAnother()
        try await a.put("payins", id: "p1", value: Array("CREATED".utf8), condition: .absent)
        let winners = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<16 {
                let store: any RecordStore = index % 2 == 0 ? a : b
                group.addTask {
                    do {
                        try await store.commit([
                            .put(
                                collection: "payins", id: "p1", value: Array("SUCCEEDED".utf8), condition: .version(1)),
                            .put(collection: "credits", id: "p1", value: [UInt8(index)], condition: .absent),
                        ])
                        return 1
                    } catch let error as StoreError where error.code == .conflict {
                        return 0
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(winners == 1)
        #expect(try await b.get("payins", id: "p1")?.version == 2)
    }

    @Test func aVersionOneSchemaIsRefusedUntilMigratedAndThenServes() async throws {
        let cluster = try #require(PostgresTestCluster.shared)
        let url = try cluster.freshURL()
        let sandbox = try StoreSandbox()
        _ = try PostgresRecordStore.migrate(uri: url)
        // What version 1 had: no cardvault_conflict().
        try cluster.psql(
            "DROP FUNCTION \(schema(url)).cardvault_conflict(); UPDATE \(schema(url)).cardvault_schema SET version = 1")
        do {
            _ = try PostgresRecordStore.open(options: PostgresStoreOptions(uri: url), keysDirectory: sandbox.keys)
            Issue.record("a version 1 schema was accepted")
        } catch let error as PostgresError {
            #expect(
                error.code == .schema && error.message.contains("version 1") && error.message.contains("db migrate"))
        }
        let upgrade = try PostgresRecordStore.migrate(uri: url)
        #expect(upgrade.from == 1 && upgrade.to == PostgresSchema.currentVersion)
        let store = try PostgresRecordStore.open(options: PostgresStoreOptions(uri: url), keysDirectory: sandbox.keys)
        defer { store.close() }
        try await store.put("cards", id: "c1", value: [1], condition: .absent)
        await #expect(throws: StoreError(.conflict, "")) {
            try await store.put("cards", id: "c1", value: [2], condition: .absent)
        }
        #expect(try await store.get("cards", id: "c1")?.value == [1])
    }

    /// With one connection, concurrent batches share transactions: a batch that misses its condition undoes the
    /// plain statement's transaction, and the others of that transaction still apply (sent again), each conflict
    /// failing only its own batch.
    @Test func aConflictInASharedTransactionFailsOnlyItsOwnBatch() async throws {
        let sandbox = try PostgresSandbox(options: { PostgresStoreOptions(uri: $0, poolSize: 1) })
        let store = sandbox.store
        for index in 0..<8 { try await store.put("regs", id: "r\(index)", value: [0], condition: .absent) }
        let outcomes = try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
            for index in 0..<64 {
                group.addTask {
                    // Even: a fresh card and an update of registration r(index/8) at version 1 (4 racers each:
                    // one wins). Odd: a fresh card alone (never conflicts).
                    var writes: [RecordWrite] = [
                        .put(collection: "cards", id: "c\(index)", value: [UInt8(index)], condition: .absent)
                    ]
                    if index % 2 == 0 {
                        writes.append(
                            .put(
                                collection: "regs", id: "r\(index % 16 / 2)", value: [UInt8(index)],
                                condition: .version(1)))
                    }
                    do {
                        _ = try await store.commit(writes)
                        return (index, true)
                    } catch let error as StoreError where error.code == .conflict {
                        return (index, false)
                    }
                }
            }
            return try await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
        }
        for index in stride(from: 1, to: 64, by: 2) {
            #expect(outcomes[index] == true, "the independent batch \(index) applied")
            #expect(try await store.get("cards", id: "c\(index)")?.value == [UInt8(index)])
        }
        for registration in 0..<8 {
            let racers = stride(from: 0, to: 64, by: 2).filter { $0 % 16 / 2 == registration }
            let winners = racers.filter { outcomes[$0] == true }
            #expect(winners.count == 1, "one winner for r\(registration)")
            let record = try await store.get("regs", id: "r\(registration)")
            #expect(record?.version == 2 && record?.value == winners.first.map { [UInt8($0)] })
            for loser in racers where outcomes[loser] == false {
                #expect(
                    try await store.get("cards", id: "c\(loser)") == nil, "the losing batch \(loser) applied nothing")
            }
        }
    }

    /// With one connection, the distinct batches queued together go as one statement: a batch that misses its
    /// condition undoes it, and then fails alone while every other batch of the take still applies (puts and
    /// deletes alike).
    @Test func aMissedConditionInAMergedTakeFailsOnlyItsOwnBatch() async throws {
        let sandbox = try PostgresSandbox(options: { PostgresStoreOptions(uri: $0, poolSize: 1) })
        let store = sandbox.store
        for index in 0..<64 { try await store.put("regs", id: "r\(index)", value: [0], condition: .absent) }
        let outcomes = try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
            for index in 0..<64 {
                group.addTask {
                    // Every batch names records of its own: a fresh card, and its registration r(index) updated at
                    // version 1 (applies), at version 7 (index % 8 == 3: misses) or deleted at version 1
                    // (index % 8 == 5: applies).
                    var writes: [RecordWrite] = [
                        .put(collection: "cards", id: "c\(index)", value: [UInt8(index)], condition: .absent)
                    ]
                    if index % 8 == 5 {
                        writes.append(.delete(collection: "regs", id: "r\(index)", condition: .version(1)))
                    } else {
                        writes.append(
                            .put(
                                collection: "regs", id: "r\(index)", value: [UInt8(index)],
                                condition: .version(index % 8 == 3 ? 7 : 1)))
                    }
                    do {
                        _ = try await store.commit(writes)
                        return (index, true)
                    } catch let error as StoreError where error.code == .conflict {
                        return (index, false)
                    }
                }
            }
            return try await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
        }
        for index in 0..<64 {
            let card = try await store.get("cards", id: "c\(index)")
            let registration = try await store.get("regs", id: "r\(index)")
            switch index % 8 {
            case 3:
                #expect(outcomes[index] == false, "batch \(index) missed its condition")
                #expect(card == nil && registration?.version == 1 && registration?.value == [0])
            case 5:
                #expect(outcomes[index] == true, "batch \(index) applied")
                #expect(card?.value == [UInt8(index)] && registration == nil)
            default:
                #expect(outcomes[index] == true, "batch \(index) applied")
                #expect(card?.value == [UInt8(index)] && registration?.version == 2)
            }
        }
    }
}
