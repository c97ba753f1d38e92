import Foundation

/// wrk (Debian) driving a URL with one of the bench's Lua scripts (`bench/wrk/`); the scripts
/// print a `CARDVAULT-BENCH {json}` line that this parses.
struct WrkLoad {
    let url: String
    let script: String
    let connections: Int
    /// Arguments passed to the script (after `--`).
    var scriptArguments: [String] = []
    /// One wrk thread per connection, for scripts that follow a connection's state (flows).
    var threadPerConnection = false
    /// wrk threads when set (at most `connections`), whatever `threadPerConnection` says.
    var threadCount: Int?

    /// wrk threads: `threadCount`, or one per connection up to the machine's cores (wrk needs threads ≤
    /// connections), or one per connection when the script keeps per-connection state.
    var threads: Int {
        if let threadCount { return min(max(1, threadCount), connections) }
        return threadPerConnection
            ? connections : min(connections, max(1, ProcessInfo.processInfo.activeProcessorCount))
    }

    /// What a script reports after a run.
    struct Report: Decodable {
        /// One wrk thread's progress (tokenize.lua): answers received and positions not acknowledged.
        struct Thread: Decodable {
            var slice: Int
            var last: Int
            var gaps: String
        }
        var requests: Int
        var duration_us: Double
        var errors: Int
        var curve: [LatencyPoint]
        /// Units of work done (flows, acknowledged tokenizations, succeeded pay-ins), when the script counts them.
        var completed: Int?
        /// Answers that were not what the script expected.
        var refused: Int?
        /// Requests that found no registration left (tokenize.lua).
        var exhausted: Int?
        var threads: [Thread]?
        /// The first refused answer, for the notes.
        var sample: String?
    }

    /// Runs wrk for `seconds` (whole seconds, at least 1) and returns requests/s and latencies.
    func run(seconds: Double) throws -> Sample {
        try runReporting(seconds: seconds).sample
    }

    /// Runs wrk and returns the sample (rate: requests/s) with the script's full report and the
    /// wall-clock duration in seconds.
    func runReporting(seconds: Double) throws -> (sample: Sample, report: Report) {
        let duration = max(1, Int(seconds.rounded()))
        var arguments = [
            "-t", String(threads), "-c", String(connections), "-d", "\(duration)s", "--timeout", "5s", "-s", script,
            url,
        ]
        if !scriptArguments.isEmpty { arguments += ["--"] + scriptArguments }
        let outcome = try ChildProcess.check("wrk", arguments, timeout: Double(duration) + 60)
        guard let line = outcome.stdout.split(separator: "\n").last(where: { $0.hasPrefix("CARDVAULT-BENCH ") }) else {
            throw BenchFailure("wrk printed no result line")
        }
        let report = try JSONDecoder().decode(Report.self, from: Data(line.dropFirst("CARDVAULT-BENCH ".count).utf8))
        guard report.requests > 0, report.duration_us > 0 else { throw BenchFailure("wrk completed no request") }
        let sample = Sample(
            rate: Double(report.requests) / (report.duration_us / 1e6),
            latency: LatencySummary(curve: report.curve),
            errors: report.errors + (report.refused ?? 0),
            generatorCores: outcome.cpuSeconds / (report.duration_us / 1e6))
        return (sample, report)
    }
}
