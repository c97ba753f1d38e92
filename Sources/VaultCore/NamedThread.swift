public import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension Thread {
    /// The longest thread name Linux keeps, in bytes (16 with the terminating zero).
    public static let nameLimit = 15

    /// A thread, not yet started, that runs `body` under `name` as the kernel shows it: `top -H`, `ps -L`, perf and
    /// `/proc/<pid>/task/*/comm`, so that an operator can tell the daemon's own threads apart and see what each
    /// costs. Foundation's `Thread.name` never reaches the kernel on Linux. A name over ``nameLimit`` bytes is cut
    /// there, at a character's end.
    public static func named(_ name: String, _ body: @escaping @Sendable () -> Void) -> Thread {
        var cut = ""
        for scalar in name.unicodeScalars {
            guard cut.utf8.count + String(scalar).utf8.count <= nameLimit else { break }
            cut.unicodeScalars.append(scalar)
        }
        let kept = cut
        let thread = Thread {
            setKernelName(kept)
            body()
        }
        thread.name = kept
        return thread
    }
}

/// Names the calling thread through /proc (`pthread_setname_np` is not in Swift's Glibc module). Best effort: a
/// thread left unnamed works the same.
private func setKernelName(_ name: String) {
    #if canImport(Glibc)
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    defer { close(fd) }
    var bytes = Array(name.utf8)
    _ = write(fd, &bytes, bytes.count)
    #endif
}
