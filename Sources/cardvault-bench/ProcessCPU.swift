import Foundation

/// CPU time of a running process from /proc/<pid>/stat (utime + stime): stable on a noisy machine where
/// rates are not, since other programs' load changes the wall time of a request but hardly its CPU.
enum ProcessCPU {
    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// User + system seconds of `pid` (its threads included), or nil if it cannot be read.
    static func seconds(of pid: pid_t) -> Double? {
        statSeconds("/proc/\(pid)/stat")?.seconds
    }

    /// User + system seconds of each live thread of `pid`, added up by the thread's name as the kernel shows it
    /// (the daemon names its own threads `cv-…`; libmicrohttpd's are `MHD-worker`, the Swift concurrency pool's are
    /// Dispatch's root-queue threads, shown as `Swift pool`).
    static func secondsByThread(of pid: pid_t) -> [String: Double] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        var byName: [String: Double] = [:]
        for task in tasks {
            guard let (name, seconds) = statSeconds("/proc/\(pid)/task/\(task)/stat") else { continue }
            byName[name.hasSuffix("-qos") || name.hasSuffix(".overcommit") ? "Swift pool" : name, default: 0] += seconds
        }
        return byName
    }

    /// The command name and user + system seconds of a /proc `stat` file.
    private static func statSeconds(_ path: String) -> (name: String, seconds: Double)? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
            let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")"), open < close
        else { return nil }
        // Fields after the command name (which may hold spaces), from field 3 (state) on.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (String(text[text.index(after: open)..<close]), (user + system) / ticksPerSecond)
    }
}

/// The daemon CPU charged to each request of the timed runs of one line, in µs.
final class CPUPerRequest {
    private(set) var micros: [Double] = []
    /// For each run, the CPU µs per request of each thread name (``ProcessCPU/secondsByThread(of:)``).
    private(set) var threadMicros: [[String: Double]] = []

    /// Runs `body` (which returns the requests it completed) and records CPU µs per request.
    func measure<T>(_ server: CardVaultServer, requests: (T) -> Int, _ body: () throws -> T) rethrows -> T {
        let before = server.cpuSeconds
        let threadsBefore = server.cpuSecondsByThread
        let result = try body()
        if let before, let after = server.cpuSeconds, requests(result) > 0 {
            let count = Double(requests(result))
            micros.append((after - before) * 1e6 / count)
            let spent = server.cpuSecondsByThread.merging(threadsBefore.mapValues { -$0 }, uniquingKeysWith: +)
            threadMicros.append(spent.mapValues { $0 * 1e6 / count })
        }
        return result
    }

    /// Each thread name's median µs per request over the timed runs, largest first, as "name 12.3 µs" (names
    /// under 0.5 µs left out).
    func threadMedians(droppingWarmup warmup: Bool) -> [String] {
        let timed = warmup && threadMicros.count > 1 ? Array(threadMicros.dropFirst()) : threadMicros
        let names = Set(timed.flatMap(\.keys))
        let medians = names.map { name in (name, Statistics.median(timed.map { $0[name] ?? 0 })) }
        return medians.filter { $0.1 >= 0.5 }.sorted { $0.1 > $1.1 }.map { "\($0.0) \(Formatting.micros($0.1))" }
    }

    /// The suites' note of each line's ``threadMedians(droppingWarmup:)``.
    static func threadNote(_ lines: [(name: String, cpu: CPUPerRequest, warmup: Bool)]) -> String {
        let parts = lines.map {
            $0.name + ": " + $0.cpu.threadMedians(droppingWarmup: $0.warmup).joined(separator: ", ")
        }
        return "Daemon CPU per request by thread (medians, /proc/<pid>/task): " + parts.joined(separator: "; ") + "."
    }

    /// The median over the timed runs (the first measurement is the warm-up's when `warmup`).
    func median(droppingWarmup warmup: Bool) -> Double? {
        let timed = warmup && micros.count > 1 ? Array(micros.dropFirst()) : micros
        return timed.isEmpty ? nil : Statistics.median(timed)
    }
}
