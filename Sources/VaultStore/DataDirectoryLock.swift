import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive `flock` on `<data>/LOCK`, held while a process owns the data directory. The file
/// holds the owner's pid so that a second opener can say who has it.
final class DataDirectoryLock: Sendable {
    static let fileName = "LOCK"
    private let descriptor: Int32

    /// Takes the lock, or throws ``StoreError`` `.locked` naming the process that holds it.
    init(directory: String) throws {
        let path = (directory as NSString).appendingPathComponent(Self.fileName)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw StoreError(.unavailable, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            var buffer = [UInt8](repeating: 0, count: 32)
            let got = pread(fd, &buffer, buffer.count, 0)
            close(fd)
            let pid =
                got > 0
                ? String(decoding: buffer[0..<got], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) : "?"
            if code == EWOULDBLOCK {
                throw StoreError(
                    .locked,
                    "data directory \(directory) is in use by another cardvault process (pid \(pid)); "
                        + "stop it, or run `cardvault keys` against it while it runs (it listens on its admin socket)")
            }
            throw StoreError(.unavailable, "cannot lock \(path): \(String(cString: strerror(code)))")
        }
        let pid = Array("\(getpid())\n".utf8)
        ftruncate(fd, 0)
        _ = pwrite(fd, pid, pid.count, 0)
        descriptor = fd
    }

    /// Releases the lock.
    func release() {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
