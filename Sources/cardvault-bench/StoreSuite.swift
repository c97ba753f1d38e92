import Foundation
import VaultCore
import VaultCrypto
import VaultStore

/// `store`: durable appends with group commit at 1, 16, 64 and 256 concurrent writers against the
/// C baseline of append + fdatasync in batches of the same size (with the store's 4 MiB of zeros
/// written ahead); point reads; start-up and index memory at 1,000,000 records.
struct StoreSuite: BenchSuite {
    let name = "store"
    let title = "durable appends with group commit, point reads, start-up and index memory"

    /// Bytes per appended record on both sides: a sealed 100-byte card record plus token, nonce,
    /// tag and framing.
    static let recordBytes = 192

    /// The 64-writer line's target (issue #15): at least this share of the C baseline's rate in the same run.
    static let targetRatio = 0.7

    /// Whether a line meets ``targetRatio``; nil when either side is missing (no ratio to tell).
    static func meets(_ comparison: Comparison) -> Bool? {
        comparison.ratio.map { $0 >= targetRatio }
    }

    private struct BaselineRun: Decodable {
        struct Commit: Decodable {
            var p50: Double
            var p99: Double
            var p999: Double
        }
        var records_per_second: Double
        var commit_us: Commit
    }

    func run(in context: SuiteContext, notes: inout [String]) throws -> [Comparison] {
        notes.append(
            "CardVault side: EncryptedFileStore (sealing each value with AES-256-GCM; group commit: one write + "
                + "fdatasync per group into a segment kept 4 MiB preallocated in zeros) in bench/.build/tmp, "
                + "\(Self.recordBytes - 64)-byte values, one put per call from N concurrent tasks.")
        notes.append(
            "Anchor: bench/c/fsync_baseline.c appends \(Self.recordBytes)-byte records, one write + fdatasync per batch "
                + "of 1/16/64/256 records, with the same 4 MiB of zeros written ahead, in bench/.build/tmp (the "
                + "repository's filesystem); its latency is the commit time of a batch (p50/p99/p99.9 only).")
        let baseline = BaselineProgram.named("fsync_baseline", in: context)
        let subjectFactory = try StoreSubject.factory(context: context)
        var comparisons: [Comparison] = []
        let only = ProcessInfo.processInfo.environment["CARDVAULT_BENCH_STORE_WRITERS"].flatMap { Int($0) }
        for writers in [1, 16, 64, 256] where only == nil || only == writers {
            let anchor: Side
            switch baseline {
            case .success(let program):
                let directory = try context.temporaryDirectory("fsync")
                anchor = .measured(
                    Workload(label: "C append + fdatasync (preallocated), batch \(writers)") { seconds in
                        let run = try program.run(
                            [directory, String(writers), String(seconds), String(Self.recordBytes)],
                            as: BaselineRun.self)
                        let commit = run.commit_us
                        return Sample(
                            rate: run.records_per_second,
                            latency: LatencySummary(curve: [
                                LatencyPoint(percentile: 50, micros: commit.p50),
                                LatencyPoint(percentile: 99, micros: commit.p99),
                                LatencyPoint(percentile: 99.9, micros: commit.p999),
                            ]))
                    })
            case .failure(let failure):
                anchor = .unavailable(failure.message)
            }
            let directory = try context.temporaryDirectory("store")
            let batches = StoreSubject.BatchCounter()
            let subject = Side.measured(
                StoreSubject.appends(writers: writers, directory: directory, open: subjectFactory, batches: batches))
            var comparison = context.compare(
                "durable appends, \(writers) writer\(writers == 1 ? "" : "s")", unit: "records/s",
                subject: subject, anchor: anchor, plan: context.shortPlan,
                target: writers == 64
                    ? { Target(goal: "≥ \(Self.targetRatio)x the C baseline", met: Self.meets($0)) } : nil
            )
            if let average = batches.averageBatch {
                comparison.note =
                    "CardVault: one put per call, \(Formatting.significant(average)) commits per fsync "
                    + "on average (group commit); latency = put call to acknowledgement; anchor latency = batch commit"
                if writers > 64 {
                    comparison.note! +=
                        "; more callers than the target's 64, to show where group commit stops "
                        + "scaling (the CPU, not the sync, is then the limit)"
                }
            }
            comparisons.append(comparison)
        }
        if only != nil { return comparisons }
        comparisons += try StoreSubject.largeStore(context: context, open: subjectFactory, notes: &notes)
        let compactionKeys = try context.temporaryDirectory("store-compaction-keys")
        _ = try KeyRing.createMasterKey(keysDirectory: compactionKeys)
        comparisons.append(try CompactionReads.comparison(context: context, keysDirectory: compactionKeys))
        return comparisons
    }
}

/// CardVault's side of the store suite: the encrypted file store (`EncryptedFileStore`).
enum StoreSubject {
    /// Opens a durable store in a directory.
    typealias Factory = @Sendable (String) throws -> EncryptedFileStore

    /// Opens the encrypted file store with a master key made for this run.
    static func factory(context: SuiteContext) throws -> Factory {
        let keys = try context.temporaryDirectory("store-keys")
        _ = try KeyRing.createMasterKey(keysDirectory: keys)
        return { directory in try EncryptedFileStore.open(directory: directory, keysDirectory: keys) }
    }

    /// Commits and fsyncs counted over the runs of one line (average group size).
    final class BatchCounter: Sendable {
        private let counts = Locked<(groups: Int, commits: Int)>((0, 0))
        func add(_ statistics: StoreStatistics) {
            counts.withLock { $0 = ($0.groups + statistics.commitGroups, $0.commits + statistics.commits) }
        }
        var averageBatch: Double? {
            counts.withLock { $0.groups > 0 ? Double($0.commits) / Double($0.groups) : nil }
        }
    }

    /// `writers` concurrent tasks each appending one record per `put`, counting acknowledged writes.
    static func appends(writers: Int, directory: String, open: @escaping Factory, batches: BatchCounter) -> Workload {
        Workload(label: "CardVault EncryptedFileStore, \(writers) writers") { seconds in
            let store = try open(directory)
            defer { store.close() }
            let value = [UInt8](repeating: 0x5A, count: StoreSuite.recordBytes - 64)
            let run = UInt64.random(in: 0...UInt64.max)
            let prefixes = (0..<writers).map { "r\(run)-w\($0)-" }
            let sample = try measureConcurrently(tasks: writers, seconds: seconds) { writer, index in
                try await store.put("bench", id: prefixes[writer] + String(index), value: value)
            }
            batches.add(store.statistics)
            return sample
        }
    }

    /// Records in the large store (1,000,000; 100,000 with `--quick`).
    static func largeStoreRecords(_ context: SuiteContext) -> Int { context.options.quick ? 100_000 : 1_000_000 }

    /// The id of record `n` of the large store: shaped like a vaulted card's (`client:card_…`).
    static func largeStoreID(_ n: Int) -> String {
        let digits = String(n)
        return "client-0001:card_" + String(repeating: "0", count: max(0, 16 - digits.count)) + digits
    }

    /// Puts records `ids` of the large store's shape (``largeStoreID(_:)``, all with `value`) from 8 tasks, in
    /// commits of 256 consecutive ids.
    static func putLargeStoreRecords(_ store: EncryptedFileStore, ids: [Int], value: [UInt8]) throws {
        let batches = stride(from: 0, to: ids.count, by: 256).map { Array(ids[$0..<min($0 + 256, ids.count)]) }
        try runBlocking {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<8 {
                    group.addTask {
                        for batch in stride(from: task, to: batches.count, by: 8) {
                            try await store.commit(
                                batches[batch].map {
                                    .put(
                                        collection: "card-numbers", id: largeStoreID($0), value: value,
                                        condition: .unconditional)
                                })
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    /// Builds the large store once (untimed), then measures point reads, start-up and index memory.
    static func largeStore(context: SuiteContext, open: @escaping Factory, notes: inout [String]) throws -> [Comparison]
    {
        let count = largeStoreRecords(context)
        let directory = try context.temporaryDirectory("store-large")
        context.progress.step("\(context.suiteName) › building a store of \(count) records (untimed)")
        let buildStart = Date()
        do {
            let store = try open(directory)
            defer { store.close() }
            try putLargeStoreRecords(
                store, ids: Array(0..<count), value: [UInt8](repeating: 0x5A, count: StoreSuite.recordBytes - 64))
        }
        let buildSeconds = Date().timeIntervalSince(buildStart)
        let sizes =
            (try? FileManager.default.subpathsOfDirectory(atPath: directory + "/segments"))?.reduce(0) {
                total, name in
                let attributes = try? FileManager.default.attributesOfItem(atPath: directory + "/segments/" + name)
                return total + ((attributes?[.size] as? NSNumber)?.intValue ?? 0)
            } ?? 0
        notes.append(
            "Large store: \(count) records\(context.options.quick ? " (--quick: 100,000 instead of 1,000,000)" : "") "
                + "of \(StoreSuite.recordBytes - 64)-byte values with card-like ids, built once per run in "
                + "\(Formatting.fixed(buildSeconds, decimals: 1)) s (commits of 256 from 8 tasks, untimed); "
                + "\(sizes / 1_000_000) MB of segments.")

        // Start-up (checkpoint + replay after it), and the index's memory, from a warm page cache.
        let plan = context.shortPlan
        var startups: [Sample] = []
        var memory: [Sample] = []
        var residentGrowth: [Double] = []
        var reads: Comparison?
        for run in 0..<plan.runs {
            context.progress.step("\(context.suiteName) › start-up at \(count) records › run \(run + 1)/\(plan.runs)")
            let residentBefore = residentBytes()
            let started = ContinuousClock.now
            let store = try open(directory)
            let seconds = micros(ContinuousClock.now - started) / 1e6
            let statistics = store.statistics
            residentGrowth.append(Double(residentBytes() - residentBefore) / Double(max(statistics.records, 1)))
            guard statistics.records == count else {
                store.close()
                throw BenchFailure("the large store reopened with \(statistics.records) records, not \(count)")
            }
            startups.append(Sample(rate: Double(statistics.records) / seconds, latency: nil))
            memory.append(Sample(rate: Double(statistics.indexMemoryBytes) / Double(statistics.records)))
            if run == 0 {
                reads = context.compare(
                    "point reads, \(count / 1000)k records", unit: "reads/s",
                    subject: .measured(pointReads(store: store, count: count)),
                    anchor: .unavailable("no anchor (CardVault-only figure)"), plan: plan,
                    note: "random ids, read + AES-GCM open, \(readers) threads")
            }
            store.close()
        }
        var startup = Comparison(
            name: "start-up at \(count / 1000)k records", unit: "records/s loaded",
            anchorNote: "no anchor (CardVault-only figure)")
        startup.subject = Series(label: "EncryptedFileStore.open (checkpoint + replay)", samples: startups)
        if let median = startup.subject?.median, median > 0 {
            startup.note =
                "open() with the checkpoint close() wrote, warm page cache: "
                + Formatting.micros(Double(count) / median * 1e6) + " to open"
        }
        var index = Comparison(
            name: "index memory at \(count / 1000)k records", unit: "bytes/record",
            anchorNote: "no anchor (CardVault-only figure)")
        index.subject = Series(label: "StoreStatistics.indexMemoryBytes / records", samples: memory)
        index.note =
            "the store's own estimate; process RSS grew by "
            + Formatting.significant(Statistics.median(residentGrowth)) + " bytes/record over open() (median of runs; "
            + "later runs reuse freed heap)"
        return [reads, startup, index].compactMap { $0 }
    }

    /// Reader threads for the point-read line: one per core.
    static var readers: Int { max(1, ProcessInfo.processInfo.activeProcessorCount) }

    /// Random point reads from `readers` threads.
    static func pointReads(store: EncryptedFileStore, count: Int) -> Workload {
        Workload(label: "EncryptedFileStore.read, \(readers) threads") { seconds in
            let total = Locked<Int>(0)
            let failure = Locked<String?>(nil)
            let started = ContinuousClock.now
            DispatchQueue.concurrentPerform(iterations: readers) { thread in
                var generator = SystemRandomNumberGenerator()
                var done = 0
                let deadline = started + .nanoseconds(Int64(seconds * 1e9))
                while ContinuousClock.now < deadline {
                    for _ in 0..<64 {
                        let id = largeStoreID(Int.random(in: 0..<count, using: &generator))
                        do {
                            guard try store.read("card-numbers", id: id) != nil else {
                                failure.withLock { $0 = "record \(id) not found" }
                                return
                            }
                        } catch {
                            failure.withLock { $0 = "\(error)" }
                            return
                        }
                        done += 1
                    }
                }
                total.withLock { $0 += done }
            }
            if let text = failure.withLock({ $0 }) { throw BenchFailure(text) }
            let elapsed = micros(ContinuousClock.now - started) / 1e6
            return Sample(rate: Double(total.withLock { $0 }) / elapsed)
        }
    }

    /// The process's resident set size in bytes (from /proc/self/statm).
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

/// A duration in microseconds.
func micros(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
}
