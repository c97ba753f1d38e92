import Foundation

/// wrk (Debian) driving a URL with one of the bench's Lua scripts (`bench/wrk/`); the scripts
/// print a `CARDVAULT-BENCH {json}` line that this parses.
struct WrkLoad {
    let url: String
    let script: String
    let connections: Int

    /// wrk threads: one per connection up to the machine's cores (wrk needs threads ≤ connections).
    var threads: Int { min(connections, max(1, ProcessInfo.processInfo.activeProcessorCount)) }

    private struct Report: Decodable {
        var requests: Int
        var duration_us: Double
        var errors: Int
        var curve: [LatencyPoint]
    }

    /// Runs wrk for `seconds` (whole seconds, at least 1) and returns requests/s and latencies.
    func run(seconds: Double) throws -> Sample {
        let duration = max(1, Int(seconds.rounded()))
        let outcome = try ChildProcess.check(
            "wrk",
            ["-t", String(threads), "-c", String(connections), "-d", "\(duration)s", "--timeout", "5s", "-s", script, url],
            timeout: Double(duration) + 30)
        guard let line = outcome.stdout.split(separator: "\n").last(where: { $0.hasPrefix("CARDVAULT-BENCH ") }) else {
            throw BenchFailure("wrk printed no result line")
        }
        let report = try JSONDecoder().decode(Report.self, from: Data(line.dropFirst("CARDVAULT-BENCH ".count).utf8))
        guard report.requests > 0, report.duration_us > 0 else { throw BenchFailure("wrk completed no request") }
        return Sample(
            rate: Double(report.requests) / (report.duration_us / 1e6),
            latency: LatencySummary(curve: report.curve),
            errors: report.errors,
            generatorCores: outcome.cpuSeconds / (report.duration_us / 1e6))
    }
}
