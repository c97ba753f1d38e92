import Foundation

/// A perf profile of the daemon (`perf record -e cpu-clock -g -p <pid>`) over one stretch of load, with its top
/// frames (self time) for the notes: `--profile` records one per tokenization run.
final class DaemonProfile {
    let dataPath: String
    private let recorder: ChildProcess

    /// Starts recording `pid`; throws when perf is not installed or cannot attach.
    init(pid: pid_t, dataPath: String) throws {
        let perf = try ChildProcess.resolve("perf")
        self.dataPath = dataPath
        recorder = try ChildProcess.start(
            perf, ["record", "-q", "-e", "cpu-clock", "-F", "997", "-g", "-p", String(pid), "-o", dataPath])
        // perf needs a moment to attach before the load starts.
        Thread.sleep(forTimeInterval: 0.3)
        guard recorder.isRunning else {
            throw BenchFailure("perf record did not start: " + recorder.errors().suffix(200))
        }
    }

    /// Stops recording and returns the top `count` frames by self time, as "12.3% symbol" lines.
    func finish(count: Int = 25) throws -> [String] {
        recorder.stop(grace: 10, signal: SIGINT)
        let report = try ChildProcess.check(
            try ChildProcess.resolve("perf"),
            ["report", "-i", dataPath, "--no-children", "--sort", "dso,symbol", "--stdio", "-g", "none"],
            timeout: 120)
        var frames: [String] = []
        for line in report.stdout.split(separator: "\n") where !line.hasPrefix("#") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 3, fields[0].hasSuffix("%") else { continue }
            // "  7.34%  cardvault  [.] symbol": percentage, library, kind, symbol.
            let symbol = fields.dropFirst(2).filter { $0 != "-" }.joined(separator: " ")
            frames.append("\(fields[0]) \(fields[1]) \(symbol.prefix(110))")
            if frames.count == count { break }
        }
        return frames
    }
}
