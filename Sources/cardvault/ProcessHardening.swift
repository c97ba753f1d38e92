import CProcessControl
import Foundation
import VaultCrypto

#if canImport(Glibc)
import Glibc
#endif

/// What `cardvault serve` does to its own process before it touches a key, so that secrets cannot
/// leave it through a crash: no core file, no ptrace or /proc/PID/mem reader of the same user, and a
/// crash report with frames only.
enum ProcessHardening {
    /// Swift's crash backtracer, as the daemon runs it: the crashed thread's frames, symbolicated,
    /// on stderr (the journal), and nothing that could hold a secret. `registers=none` leaves out the
    /// register dump (by default the crashed thread's registers and 16 bytes of the memory each one
    /// points to, which may be key or card bytes); `images=none` the loaded-image list (addresses
    /// only, but no use without a core); `threads=crashed` other threads' frames; `sanitize=yes`
    /// replaces home-directory paths; `interactive=no` never waits on a terminal, `color=no` plain
    /// text. Frames themselves hold only addresses and symbol names. Checked against swift-backtrace
    /// 6.3's options (`swift-backtrace --help`); an unknown key would print "swift runtime: unknown
    /// ... setting" at start.
    static let crashBacktrace =
        "enable=yes,interactive=no,color=no,preset=friendly,registers=none,images=none,threads=crashed,sanitize=yes,"
        + "output-to=stderr,symbolicate=fast"
    /// No crash report at all (`CARDVAULT_CRASH_BACKTRACE=off`).
    static let noBacktrace = "enable=no"

    /// The SWIFT_BACKTRACE value the daemon runs with: `CARDVAULT_CRASH_BACKTRACE=off` turns the
    /// backtracer off, anything else (or nothing) gives ``crashBacktrace``.
    static func wantedBacktrace(environment: [String: String]) -> String {
        environment["CARDVAULT_CRASH_BACKTRACE"]?.lowercased() == "off" ? noBacktrace : crashBacktrace
    }

    /// Swift's runtime reads SWIFT_BACKTRACE once, when the process starts, so the daemon cannot
    /// change it for itself: when it differs from ``wantedBacktrace(environment:)``, the process
    /// replaces itself (execv of /proc/self/exe, same arguments, same PID) with the variable set.
    /// The second start finds it set and goes on. Returns only when no re-exec was needed or the
    /// exec failed (the reason is returned then; the daemon runs on with the inherited setting).
    static func reexecWithCrashBacktraceSettings() -> String? {
        let environment = ProcessInfo.processInfo.environment
        let wanted = wantedBacktrace(environment: environment)
        guard environment["SWIFT_BACKTRACE"] != wanted else { return nil }
        setenv("SWIFT_BACKTRACE", wanted, 1)
        FileHandle.standardOutput.synchronizeFile()
        execv("/proc/self/exe", CommandLine.unsafeArgv)
        return "cannot re-execute with SWIFT_BACKTRACE set: " + String(cString: strerror(errno))
    }

    /// Core-file limit 0 (soft and hard, so no child can raise it again) and not dumpable.
    /// - Throws: ``CommandFailure`` when either call fails.
    static func disableCoreDumps() throws {
        let failure = cv_disable_core_dumps()
        guard failure == 0 else {
            throw CommandFailure("cannot turn core dumps off: " + String(cString: strerror(failure)))
        }
    }

    /// Refuses a data or keys directory that group or others may enter, list or change, and key
    /// files they may read; creates a missing directory with mode 0700.
    /// - Throws: ``CommandFailure`` with exit status 78 (configuration) naming the path, its mode
    ///   and the `chmod` that fixes it.
    static func enforcePrivateModes(dataDirectory: String, keysDirectory: String) throws {
        for (role, directory) in [("data directory", dataDirectory), ("keys directory", keysDirectory)] {
            var status = stat()
            if stat(directory, &status) != 0 {
                guard errno == ENOENT else {
                    throw CommandFailure("cannot inspect the \(role) \(directory): \(String(cString: strerror(errno)))")
                }
                guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
                    throw CommandFailure("cannot create the \(role) \(directory): \(String(cString: strerror(errno)))")
                }
                continue
            }
            guard status.st_mode & S_IFMT == S_IFDIR else {
                throw CommandFailure("the \(role) \(directory) is not a directory", status: 78)
            }
            if status.st_mode & 0o077 != 0 {
                throw CommandFailure(
                    "the \(role) \(directory) is open to group or others (mode \(octal(status.st_mode & 0o777)));"
                        + " run: chmod 700 \(directory)", status: 78)
            }
        }
        // Key files (`master.key` and any other `*.key`, such as a backup): a copy made with a loose mode
        // inside a private directory is still refused. Other files (the checkout's README) hold no secret.
        let names = (try? FileManager.default.contentsOfDirectory(atPath: keysDirectory)) ?? []
        for name in names.sorted() where name.hasSuffix(".key") || name.hasPrefix(KeyRing.masterKeyFileName) {
            let path = (keysDirectory as NSString).appendingPathComponent(name)
            var status = stat()
            guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { continue }
            if status.st_mode & 0o077 != 0 {
                throw CommandFailure(
                    "the key file \(path) is open to group or others (mode \(octal(status.st_mode & 0o777)));"
                        + " run: chmod 600 \(path)", status: 78)
            }
        }
    }

    private static func octal(_ mode: mode_t) -> String {
        "0" + String(mode, radix: 8)
    }
}
