import Foundation

/// A throw-away PostgreSQL 15 cluster in a temporary directory (initdb + pg_ctl), listening only on
/// a Unix socket in that directory, with fsync and synchronous_commit on. Run as the `postgres`
/// user (via runuser) when the bench runs as root.
final class PostgresCluster {
    /// Where Debian puts the server binaries.
    static let binaries = "/usr/lib/postgresql/15/bin"

    let directory: String
    let port = 5432
    private var running = false

    /// Creates and starts the cluster with pgcrypto and the peer's schema.
    init(context: SuiteContext, schema: String) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binaries + "/initdb") else {
            throw BenchFailure("PostgreSQL 15 not installed (\(Self.binaries))")
        }
        directory = try Self.makeDirectory(context)
        try asServerUser(
            Self.binaries + "/initdb",
            ["-D", directory + "/data", "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"])
        let settings = [
            "listen_addresses=''", "unix_socket_directories='\(directory)'", "port=\(port)", "fsync=on",
            "synchronous_commit=on", "max_connections=100", "shared_buffers=256MB", "wal_buffers=16MB",
        ]
        // For profiling only (never in a recorded run): e.g. "shared_preload_libraries=pg_stat_statements".
        let extra = (ProcessInfo.processInfo.environment["CARDVAULT_BENCH_POSTGRES_SETTINGS"] ?? "")
            .split(separator: " ").map(String.init)
        let options = (settings + extra).map { "-c " + $0 }.joined(separator: " ")
        try asServerUser(
            Self.binaries + "/pg_ctl",
            ["-D", directory + "/data", "-l", directory + "/server.log", "-w", "-t", "60", "-o", options, "start"])
        running = true
        try ChildProcess.check(
            Self.binaries + "/psql",
            [
                "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", directory, "-p", String(port), "-U", "postgres", "-d",
                "postgres", "-f", schema,
            ])
    }

    /// Stops the server (fast shutdown) and removes the directory.
    func stop() {
        guard running else { return }
        running = false
        _ = try? asServerUser(Self.binaries + "/pg_ctl", ["-D", directory + "/data", "-m", "fast", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    deinit { stop() }

    /// User + system CPU seconds of the whole server so far: the postmaster, its live children (backends,
    /// WAL writer, checkpointer...) and the children it has reaped (cutime + cstime), so a run's delta holds
    /// the backends that ended during it (pgbench's) as well as the long-lived ones (the daemons' pools).
    var cpuSeconds: Double? {
        guard
            let text = try? String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8),
            let line = text.split(separator: "\n").first, let postmaster = pid_t(line)
        else { return nil }
        guard let own = Self.stat(postmaster), own.fields.count > 14, let reapedUser = Double(own.fields[13]),
            let reapedSystem = Double(own.fields[14])
        else { return nil }
        var ticks = own.cpu + reapedUser + reapedSystem
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry), pid != postmaster, let child = Self.stat(pid), child.fields.count > 1,
                child.fields[1] == String(postmaster)
            else { continue }
            ticks += child.cpu
        }
        return ticks / ProcessCPU.ticksPerSecond
    }

    /// The fields of /proc/<pid>/stat after the command name (from field 3, state, on) and utime + stime in ticks.
    private static func stat(_ pid: pid_t) -> (fields: [Substring], cpu: Double)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (fields, user + system)
    }

    /// Runs a server binary as `postgres` when we are root (PostgreSQL refuses to run as root).
    @discardableResult
    private func asServerUser(_ program: String, _ arguments: [String]) throws -> ChildProcess.Outcome {
        if getuid() == 0 {
            return try ChildProcess.check("runuser", ["-u", "postgres", "--", program] + arguments, timeout: 120)
        }
        return try ChildProcess.check(program, arguments, timeout: 120)
    }

    /// A directory the server user can write, on the repository's filesystem when possible so the
    /// fsync cost matches CardVault's; `/var/tmp` otherwise (never a tmpfs /tmp).
    private static func makeDirectory(_ context: SuiteContext) throws -> String {
        let directory = try context.temporaryDirectory("postgres")
        chmod(directory, 0o700)
        guard getuid() == 0 else { return directory }
        if (try? ChildProcess.run("chown", ["postgres:postgres", directory]))?.status == 0,
            (try? ChildProcess.run("runuser", ["-u", "postgres", "--", "test", "-w", directory]))?.status == 0
        {
            return directory
        }
        try? FileManager.default.removeItem(atPath: directory)
        var template = Array("/var/tmp/cardvault-bench-postgres.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw BenchFailure("cannot create a directory for PostgreSQL") }
        let fallback = String(cString: made)
        try ChildProcess.check("chown", ["postgres:postgres", fallback])
        return fallback
    }
}

/// pgbench (PostgreSQL 15) running a custom script against a ``PostgresCluster`` with prepared
/// statements; throughput from its summary, latencies from its per-transaction log.
struct PgbenchLoad {
    let cluster: PostgresCluster
    let script: String
    let clients: Int
    let variables: [String: String]

    private static let tpsPattern = "tps = "

    /// pgbench's `-T` for a run of `seconds`: at least 3 s, since its clock includes connecting the 64 clients
    /// (a backend fork each), which on a busy 2-core host can take the whole of a 1-s warm-up ("processed: 0").
    static func duration(_ seconds: Double) -> Int { max(3, Int(seconds.rounded())) }

    func run(seconds: Double) throws -> Sample {
        let duration = Self.duration(seconds)
        let logs = cluster.directory + "/pgbench-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: logs) }
        var arguments = [
            "-n", "-M", "prepared", "-c", String(clients), "-j", String(min(clients, 2)), "-T", String(duration),
            "-f", script, "-h", cluster.directory, "-p", String(cluster.port), "-U", "postgres", "-l",
            "--log-prefix=" + logs + "/tx",
        ]
        for (name, value) in variables.sorted(by: { $0.key < $1.key }) { arguments += ["-D", "\(name)=\(value)"] }
        arguments.append("postgres")
        let outcome = try ChildProcess.check(
            PostgresCluster.binaries + "/pgbench", arguments, timeout: Double(duration) + 60)
        guard let line = outcome.stdout.split(separator: "\n").first(where: { $0.contains(Self.tpsPattern) }),
            let range = line.range(of: Self.tpsPattern),
            let tps = Double(line[range.upperBound...].prefix { $0.isNumber || $0 == "." })
        else {
            let tail =
                (outcome.stdout.split(separator: "\n").suffix(2) + outcome.stderr.split(separator: "\n").suffix(2))
            throw BenchFailure("pgbench printed no tps line: " + tail.joined(separator: " / ").suffix(400))
        }
        let failed =
            outcome.stdout.split(separator: "\n").first { $0.contains("number of failed transactions") }
            .flatMap { $0.split(separator: ":").last?.split(separator: " ").first.flatMap { Int($0) } } ?? 0
        var latencies: [Double] = []
        for file in (try? FileManager.default.contentsOfDirectory(atPath: logs)) ?? [] {
            let text = (try? String(contentsOfFile: logs + "/" + file, encoding: .utf8)) ?? ""
            for record in text.split(separator: "\n") {
                // client_id transaction_no time script_no time_epoch time_us: `time` is the latency in µs
                let fields = record.split(separator: " ", maxSplits: 3)
                if fields.count >= 3, let value = Double(fields[2]) { latencies.append(value) }
            }
        }
        return Sample(
            rate: tps, latency: latencies.isEmpty ? nil : LatencySummary(micros: latencies), errors: failed,
            generatorCores: outcome.cpuSeconds / Double(duration))
    }
}
