import Foundation

/// A benchmark suite: measures one part of CardVault side by side with its anchor.
protocol BenchSuite: Sendable {
    /// The name the command line filters by, e.g. "crypto".
    var name: String { get }
    /// A one-line description for the table and the report.
    var title: String { get }
    /// Runs the suite's comparisons; `notes` collects set-up facts worth keeping with the figures.
    func run(in context: SuiteContext, notes: inout [String]) throws -> [Comparison]
}

/// The subject has not landed on this branch yet: what the table and JSON say instead of a figure.
let subjectNotBuilt = "not available yet (subject not built)"

/// One side of a comparison: something to run, or the reason there is nothing to run.
enum Side {
    case measured(Workload)
    case unavailable(String)
}

/// A workload that runs for about the given number of seconds and reports one sample.
struct Workload {
    /// What runs, for the table and report (e.g. "nginx 1.22 (64-byte body)").
    var label: String
    /// Runs once for about `seconds` and returns the measured sample.
    var run: (_ seconds: Double) throws -> Sample
}

/// How long and how often a comparison runs.
struct RunPlan {
    var warmupSeconds: Double
    var runs: Int
    var seconds: Double
}

/// A failure of the bench itself (a missing tool, an anchor that did not start).
struct BenchFailure: Error, CustomStringConvertible {
    var message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

/// What a suite gets to work with: options, paths, plans, the progress display and the runner.
final class SuiteContext {
    let options: BenchOptions
    let progress: ProgressDisplay
    /// The suite currently running, for progress lines.
    var suiteName = ""
    private var temporaryDirectories: [String] = []

    init(options: BenchOptions, progress: ProgressDisplay) {
        self.options = options
        self.progress = progress
    }

    /// The repository root.
    var root: String { options.root }
    /// Where the Makefile builds the C baselines.
    var baselineDirectory: String { root + "/bench/.build" }
    /// The bench's own files (wrk scripts, nginx template, peer scripts).
    var benchDirectory: String { root + "/bench" }

    /// Plan for in-process and C-program workloads (CPU or fsync bound, short runs suffice).
    var shortPlan: RunPlan {
        options.quick
            ? RunPlan(warmupSeconds: 0.2, runs: 3, seconds: 0.3)
            : RunPlan(warmupSeconds: 0.5, runs: 5, seconds: 1.0)
    }

    /// Plan for load-generator workloads (wrk, pgbench): longer runs, fewer of them.
    var loadPlan: RunPlan {
        options.quick
            ? RunPlan(warmupSeconds: 0.5, runs: 1, seconds: 1.0)
            : RunPlan(warmupSeconds: 1.0, runs: 3, seconds: 4.0)
    }

    /// A fresh temporary directory under `bench/.build/tmp` (same filesystem as the repository,
    /// so fsync figures describe the disk the daemon's data directory lives on).
    func temporaryDirectory(_ prefix: String) throws -> String {
        let parent = baselineDirectory + "/tmp"
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        var template = Array((parent + "/" + prefix + ".XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw BenchFailure("cannot create a directory under \(parent)") }
        let directory = String(cString: made)
        temporaryDirectories.append(directory)
        return directory
    }

    /// Removes every directory ``temporaryDirectory(_:)`` made.
    func removeTemporaryDirectories() {
        for directory in temporaryDirectories { try? FileManager.default.removeItem(atPath: directory) }
        temporaryDirectories.removeAll()
    }

    /// Measures `subject` and `anchor` with `plan`: a warm-up of each, then `plan.runs` runs that
    /// alternate which side goes first, so slow drift (other processes, thermal) hits both.
    /// A side that throws is reported in its note; the other side still runs.
    func compare(
        _ name: String, unit: String, subject: Side, anchor: Side, plan: RunPlan,
        target: ((Comparison) -> Target)? = nil, note: String? = nil
    ) -> Comparison {
        var comparison = Comparison(name: name, unit: unit, note: note)
        var sides: [(role: String, workload: Workload)] = []
        switch subject {
        case .measured(let workload): sides.append(("subject", workload))
        case .unavailable(let reason): comparison.subjectNote = reason
        }
        switch anchor {
        case .measured(let workload): sides.append(("anchor", workload))
        case .unavailable(let reason): comparison.anchorNote = reason
        }
        var samples: [String: [Sample]] = [:]
        var failures: [String: String] = [:]
        for side in sides {
            progress.step("\(suiteName) › \(name) › \(side.role) warm-up")
            do {
                _ = try side.workload.run(plan.warmupSeconds)
            } catch {
                failures[side.role] = "failed: \(error)"
            }
        }
        for run in 0..<plan.runs {
            let ordered = run % 2 == 0 ? sides : sides.reversed()
            for side in ordered where failures[side.role] == nil {
                progress.step("\(suiteName) › \(name) › \(side.role) run \(run + 1)/\(plan.runs)")
                do {
                    samples[side.role, default: []].append(try side.workload.run(plan.seconds))
                } catch {
                    failures[side.role] = "failed: \(error)"
                }
            }
        }
        for side in sides {
            if let failure = failures[side.role] {
                if side.role == "subject" { comparison.subjectNote = failure } else { comparison.anchorNote = failure }
                continue
            }
            let series = Series(label: side.workload.label, samples: samples[side.role] ?? [])
            if side.role == "subject" { comparison.subject = series } else { comparison.anchor = series }
        }
        if let subject = comparison.subject, let anchor = comparison.anchor, anchor.median > 0 {
            comparison.ratio = subject.median / anchor.median
        }
        if let target { comparison.target = target(comparison) }
        return comparison
    }
}
