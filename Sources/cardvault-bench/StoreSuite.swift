import Foundation
import Synchronization
import VaultStore

/// `store`: durable appends with group commit at 1, 16 and 64 concurrent writers against the C
/// baseline of append + fsync in batches of the same size; point reads; start-up and index memory
/// at 1,000,000 records.
struct StoreSuite: BenchSuite {
    let name = "store"
    let title = "durable appends with group commit, point reads, start-up and index memory"

    /// Bytes per appended record on both sides: a sealed 100-byte card record plus token, nonce,
    /// tag and framing.
    static let recordBytes = 192

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
            "Anchor: bench/c/fsync_baseline.c appends \(Self.recordBytes)-byte records, one write + fsync per batch of "
                + "1/16/64 records, in bench/.build/tmp (the repository's filesystem); its latency is the commit "
                + "time of a batch (p50/p99/p99.9 only).")
        let baseline = BaselineProgram.named("fsync_baseline", in: context)
        let subjectFactory = StoreSubject.factory()
        if subjectFactory == nil {
            notes.append("CardVault side: the encrypted file store has not landed; only the RecordStore protocol and "
                + "its in-memory twin exist, which are not durable and so are not measured.")
        }
        var comparisons: [Comparison] = []
        for writers in [1, 16, 64] {
            let anchor: Side
            switch baseline {
            case .success(let program):
                let directory = try context.temporaryDirectory("fsync")
                anchor = .measured(Workload(label: "C append + fsync, batch \(writers)") { seconds in
                    let run = try program.run(
                        [directory, String(writers), String(seconds), String(Self.recordBytes)], as: BaselineRun.self)
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
            let subject: Side
            if let subjectFactory {
                let directory = try context.temporaryDirectory("store")
                subject = .measured(StoreSubject.appends(writers: writers, directory: directory, open: subjectFactory))
            } else {
                subject = .unavailable(subjectNotBuilt)
            }
            comparisons.append(
                context.compare(
                    "durable appends, \(writers) writer\(writers == 1 ? "" : "s")", unit: "records/s",
                    subject: subject, anchor: anchor, plan: context.shortPlan,
                    target: writers == 64
                        ? { Target(goal: "≥ 100k records/s", met: $0.subject.map { $0.median >= 100_000 }) } : nil
                ))
        }
        for (measure, unit) in [
            ("point reads", "reads/s"), ("start-up at 1M records", "records/s loaded"),
            ("index memory at 1M records", "bytes/record"),
        ] {
            comparisons.append(
                Comparison(
                    name: measure, unit: unit, subjectNote: subjectNotBuilt,
                    anchorNote: "no anchor (CardVault-only figure)"))
        }
        return comparisons
    }
}

/// CardVault's side of the store suite.
enum StoreSubject {
    /// Opens a durable store in a directory.
    typealias Factory = @Sendable (String) throws -> any RecordStore

    /// The durable (encrypted file) store, once it exists on this branch; nil until then.
    static func factory() -> Factory? {
        nil
    }

    /// `writers` concurrent tasks each appending one record per `put`, counting acknowledged writes.
    static func appends(writers: Int, directory: String, open: @escaping Factory) -> Workload {
        Workload(label: "CardVault VaultStore, \(writers) writers") { seconds in
            let store = try open(directory)
            return try runBlocking {
                let deadline = ContinuousClock.now + .nanoseconds(Int64(seconds * 1e9))
                let value = [UInt8](repeating: 0x5A, count: StoreSuite.recordBytes - 64)
                let run = UInt64.random(in: 0...UInt64.max)
                let started = ContinuousClock.now
                let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
                    for writer in 0..<writers {
                        group.addTask {
                            var mine: [Double] = []
                            var index = 0
                            while ContinuousClock.now < deadline {
                                let begin = ContinuousClock.now
                                try await store.put("bench", id: "r\(run)-w\(writer)-\(index)", value: value)
                                mine.append(micros(ContinuousClock.now - begin))
                                index += 1
                            }
                            return mine
                        }
                    }
                    var all: [Double] = []
                    for try await part in group { all += part }
                    return all
                }
                let elapsed = micros(ContinuousClock.now - started) / 1e6
                return Sample(rate: Double(latencies.count) / elapsed, latency: LatencySummary(micros: latencies))
            }
        }
    }
}

/// A duration in microseconds.
func micros(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
}
