import Foundation

/// CPU time of a running process from /proc/<pid>/stat (utime + stime): stable on a noisy machine where
/// rates are not, since other programs' load changes the wall time of a request but hardly its CPU.
enum ProcessCPU {
    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// User + system seconds of `pid` (its threads included), or nil if it cannot be read.
    static func seconds(of pid: pid_t) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // Fields after the command name (which may hold spaces), from field 3 (state) on.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / ticksPerSecond
    }
}

/// The daemon CPU charged to each request of the timed runs of one line, in µs.
final class CPUPerRequest {
    private(set) var micros: [Double] = []

    /// Runs `body` (which returns the requests it completed) and records CPU µs per request.
    func measure<T>(_ server: CardVaultServer, requests: (T) -> Int, _ body: () throws -> T) rethrows -> T {
        let before = server.cpuSeconds
        let result = try body()
        if let before, let after = server.cpuSeconds, requests(result) > 0 {
            micros.append((after - before) * 1e6 / Double(requests(result)))
        }
        return result
    }

    /// The median over the timed runs (the first measurement is the warm-up's when `warmup`).
    func median(droppingWarmup warmup: Bool) -> Double? {
        let timed = warmup && micros.count > 1 ? Array(micros.dropFirst()) : micros
        return timed.isEmpty ? nil : Statistics.median(timed)
    }
}
