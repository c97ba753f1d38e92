import Dispatch
import Foundation
import VaultCore
import VaultStore

/// The store suite's compaction line: how long point reads wait while `compact()` moves records, against the same
/// reads in the same store with nothing else running. Reads and commits share the store's state lock with
/// compaction's work, so a long hold of it shows as the longest read (in the line's note) and in the high
/// percentiles.
enum CompactionReads {
    /// Records in the store (100,000 with `--quick`, 300,000 otherwise), in 2 MiB segments so that compaction has
    /// a few dozen closed segments to empty.
    static func records(_ context: SuiteContext) -> Int { context.options.quick ? 100_000 : 300_000 }

    static func comparison(context: SuiteContext, keysDirectory: String) throws -> Comparison {
        let count = records(context)
        let directory = try context.temporaryDirectory("store-compaction")
        let options = FileStoreOptions(segmentBytes: 2 << 20, automaticCompaction: false)
        let store = try EncryptedFileStore.open(directory: directory, keysDirectory: keysDirectory, options: options)
        defer { store.close() }
        context.progress.step("\(context.suiteName) › building a store of \(count) records for compaction (untimed)")
        try write(store, ids: Array(0..<count), round: 0)
        let round = Locked(0)
        // Before each run, untimed: every other record is written again, so that half of what the closed
        // segments hold is garbage for compaction to drop (and the anchor's store grows alike).
        let overwriteHalf: @Sendable () throws -> Void = {
            let next = round.withLock {
                $0 += 1
                return $0
            }
            try write(store, ids: Array(stride(from: next % 2, to: count, by: 2)), round: next)
        }
        let longest = Locked<(subject: Double, anchor: Double)>((0, 0))
        let compactions = Locked<[Double]>([])
        let subject = Workload(label: "EncryptedFileStore.read while compact() runs, 1 thread") { _ in
            try overwriteHalf()
            let started = ContinuousClock.now
            let (sample, worst) = try reads(store, count: count) { _ = try await store.compact() }
            compactions.withLock { $0.append(micros(ContinuousClock.now - started)) }
            longest.withLock { $0.subject = max($0.subject, worst) }
            return sample
        }
        let anchor = Workload(label: "EncryptedFileStore.read, nothing else running, 1 thread") { seconds in
            try overwriteHalf()
            let (sample, worst) = try reads(store, count: count) { try await Task.sleep(for: .seconds(seconds)) }
            longest.withLock { $0.anchor = max($0.anchor, worst) }
            return sample
        }
        var comparison = context.compare(
            "point reads during compaction, \(count / 1000)k records", unit: "reads/s", subject: .measured(subject),
            anchor: .measured(anchor), plan: context.shortPlan)
        let worst = longest.withLock { $0 }
        comparison.note =
            "2 MiB segments, half of each closed one garbage before every run; compaction took "
            + Formatting.micros(Statistics.median(compactions.withLock { $0 })) + " (median); the longest read: "
            + Formatting.micros(worst.subject) + " during compaction, " + Formatting.micros(worst.anchor) + " without"
        return comparison
    }

    /// Puts `ids`, each value marked with `round`.
    private static func write(_ store: EncryptedFileStore, ids: [Int], round: Int) throws {
        let value = [UInt8(truncatingIfNeeded: round)] + [UInt8](repeating: 0x5A, count: StoreSuite.recordBytes - 65)
        try StoreSubject.putLargeStoreRecords(store, ids: ids, value: value)
    }

    /// Random point reads on this thread until `work` (run on the concurrency pool) ends: the sample, and the
    /// longest read in microseconds.
    private static func reads(
        _ store: EncryptedFileStore, count: Int, during work: @escaping @Sendable () async throws -> Void
    ) throws -> (Sample, Double) {
        let finished = Locked<Result<Void, any Error>?>(nil)
        let started = ContinuousClock.now
        Task.detached {
            let outcome: Result<Void, any Error>
            do {
                try await work()
                outcome = .success(())
            } catch {
                outcome = .failure(error)
            }
            finished.withLock { $0 = outcome }
        }
        var generator = SystemRandomNumberGenerator()
        var latencies: [Double] = []
        latencies.reserveCapacity(1 << 20)
        while finished.withLock({ $0 }) == nil {
            let id = StoreSubject.largeStoreID(Int.random(in: 0..<count, using: &generator))
            let begin = ContinuousClock.now
            guard try store.read("card-numbers", id: id) != nil else { throw BenchFailure("record \(id) not found") }
            latencies.append(micros(ContinuousClock.now - begin))
        }
        if case .failure(let error) = finished.withLock({ $0 }) { throw error }
        let elapsed = micros(ContinuousClock.now - started) / 1e6
        return (
            Sample(rate: Double(latencies.count) / elapsed, latency: LatencySummary(micros: latencies)),
            latencies.max() ?? 0
        )
    }
}
