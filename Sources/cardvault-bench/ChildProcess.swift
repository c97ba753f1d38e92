import Foundation

/// A program the bench runs: to completion (`run`) or in the background (`start`, `stop`).
/// Output goes to files, never pipes, so a chatty child can never block on a full pipe. Spawned
/// with `posix_spawn` and reaped with `waitpid` (Foundation's `Process` waits for a socket that
/// daemons such as `pg_ctl start` leave open in their server).
final class ChildProcess {
    /// What a finished program left behind.
    struct Outcome {
        var status: Int32
        var stdout: String
        var stderr: String
        /// User + system CPU seconds the program (and the children it waited for) used.
        var cpuSeconds: Double
    }

    let pid: pid_t
    private var exitStatus: Int32?
    private var cpuSeconds = 0.0
    private let outputPath: String
    private let errorPath: String

    private init(_ executable: String, _ arguments: [String], environment: [String: String]?) throws {
        let resolved = try ChildProcess.resolve(executable)
        let base = NSTemporaryDirectory() + "cardvault-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        outputPath = base + ".out"
        errorPath = base + ".err"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        ChildProcess.closeOnExec()
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let merged = ProcessInfo.processInfo.environment.merging(environment ?? [:]) { $1 }
        let argv = ([resolved] + arguments).map { strdup($0) } + [nil]
        let envp = merged.map { strdup($0.key + "=" + $0.value) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var child: pid_t = 0
        let result = posix_spawn(&child, resolved, &actions, &attributes, argv, envp)
        guard result == 0 else { throw BenchFailure("cannot start \(executable): error \(result)") }
        pid = child
    }

    deinit {
        stop(grace: 2)
        try? FileManager.default.removeItem(atPath: outputPath)
        try? FileManager.default.removeItem(atPath: errorPath)
    }

    /// Marks every descriptor above stderr close-on-exec, so no child inherits the bench's files or
    /// sockets (and no daemon a child starts keeps them open).
    private static func closeOnExec() {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return }
        for entry in entries {
            guard let fd = Int32(entry), fd > 2 else { continue }
            let flags = fcntl(fd, F_GETFD)
            if flags >= 0 && flags & FD_CLOEXEC == 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
        }
    }

    /// Reaps the child if it has exited; true while it runs.
    private func poll() -> Bool {
        guard exitStatus == nil else { return false }
        var status: Int32 = 0
        var usage = rusage()
        let reaped = wait4(pid, &status, WNOHANG, &usage)
        if reaped == pid {
            cpuSeconds =
                Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
                + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
            // WIFEXITED: low 7 bits zero; WEXITSTATUS: bits 8-15; a signal death reports 128 + signal.
            exitStatus = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
            return false
        }
        if reaped < 0 {
            exitStatus = -1
            return false
        }
        return true
    }

    /// Runs `executable` (a path, or a name looked up on PATH) to completion, killing it after
    /// `timeout` seconds.
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        timeout: Double = 120
    ) throws -> Outcome {
        let child = try ChildProcess(executable, arguments, environment: environment)
        let deadline = Date().addingTimeInterval(timeout)
        while child.poll() {
            if Date() > deadline {
                child.stop()
                throw BenchFailure("\(executable) did not finish within \(Int(timeout)) s")
            }
            usleep(2_000)
        }
        return Outcome(
            status: child.exitStatus ?? -1, stdout: child.output(), stderr: child.errors(), cpuSeconds: child.cpuSeconds
        )
    }

    /// Runs like `run` and throws when the exit status is not 0, with the end of stderr.
    @discardableResult
    static func check(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        timeout: Double = 120
    ) throws -> Outcome {
        let outcome = try run(executable, arguments, environment: environment, timeout: timeout)
        guard outcome.status == 0 else {
            let tail = outcome.stderr.split(separator: "\n").suffix(3).joined(separator: " / ")
            throw BenchFailure("\(executable) exited with \(outcome.status): \(tail)")
        }
        return outcome
    }

    /// Starts `executable` in the background.
    static func start(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil
    ) throws -> ChildProcess {
        try ChildProcess(executable, arguments, environment: environment)
    }

    /// True while the background program runs.
    var isRunning: Bool { poll() }

    /// Sends SIGTERM (or `signal`), waits up to `grace` seconds, then SIGKILL.
    func stop(grace: Double = 5, signal: Int32 = SIGTERM) {
        guard poll() else { return }
        Glibc.kill(pid, signal)
        let deadline = Date().addingTimeInterval(grace)
        while poll() && Date() < deadline { usleep(5_000) }
        if poll() {
            Glibc.kill(pid, SIGKILL)
            while poll() { usleep(1_000) }
        }
    }

    /// Kills the program at once (SIGKILL, as a crash or power cut would stop it) and reaps it.
    func kill() {
        guard poll() else { return }
        Glibc.kill(pid, SIGKILL)
        while poll() { usleep(1_000) }
    }

    /// What the program wrote to stdout so far.
    func output() -> String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    /// What the program wrote to stderr so far.
    func errors() -> String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

    /// The path of `name` on PATH (or `name` itself when it holds a slash).
    static func resolve(_ name: String) throws -> String {
        if name.contains("/") {
            guard FileManager.default.isExecutableFile(atPath: name) else { throw BenchFailure("\(name) not found") }
            return name
        }
        if let found = which(name) { return found }
        throw BenchFailure("\(name) not found on PATH")
    }

    /// The path of `name` on PATH (plus the sbin directories), or nil.
    static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin"] {
            let candidate = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
