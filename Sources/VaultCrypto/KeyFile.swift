public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads and writes small secret files (the master key, the keyring): owner-only permissions,
/// written whole to a temporary name, synced, then renamed into place so that a crash leaves either
/// the old file or the new one.
public enum KeyFile {
    /// Bytes in the master key-encryption key file.
    public static let masterKeySize = 32

    /// Creates `directory` (mode 0700) if it does not exist.
    public static func makeDirectory(_ directory: String) throws {
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw KeyRingError(.io, "cannot create directory \(directory): \(errnoText())")
        }
    }

    /// Reads a secret file whole into a secure buffer.
    /// - Parameter requirePrivate: refuse a file that group or others may read or write.
    /// - Throws: ``KeyRingError`` `.missing` when absent, `.insecurePermissions`, `.io`.
    public static func readSecret(_ path: String, requirePrivate: Bool = true) throws -> SecureBytes {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { throw KeyRingError(.missing, "\(path) does not exist") }
            throw KeyRingError(.io, "cannot open \(path): \(errnoText())")
        }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw KeyRingError(.io, "cannot stat \(path): \(errnoText())") }
        if requirePrivate && status.st_mode & 0o077 != 0 {
            throw KeyRingError(
                .insecurePermissions,
                "\(path) is readable or writable by others; run: chmod 600 \(path)")
        }
        let size = Int(status.st_size)
        return try SecureBytes(count: size) { buffer in
            var done = 0
            while done < size {
                let got = read(fd, buffer.baseAddress! + done, size - done)
                if got < 0 && errno == EINTR { continue }
                guard got > 0 else { throw KeyRingError(.io, "cannot read \(path): \(errnoText())") }
                done += got
            }
        }
    }

    /// Reads a whole (non-secret) file, or nil when it does not exist.
    public static func readFile(_ path: String) throws -> [UInt8]? {
        do {
            let bytes = try readSecret(path, requirePrivate: false)
            return bytes.withUnsafeBytes { Array($0) }
        } catch let error as KeyRingError where error.code == .missing {
            return nil
        }
    }

    /// Writes `bytes` to `path` atomically with mode 0600: a temporary file, fsync, rename, and an
    /// fsync of the directory.
    /// - Parameter exclusive: fail with `.exists` instead of replacing an existing file.
    public static func writeAtomically(_ path: String, _ bytes: some ContiguousBytes, exclusive: Bool = false) throws {
        let temporary = path + ".tmp"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw KeyRingError(.io, "cannot create \(temporary): \(errnoText())") }
        var failure: KeyRingError?
        bytes.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let wrote = write(fd, buffer.baseAddress! + done, buffer.count - done)
                if wrote < 0 && errno == EINTR { continue }
                guard wrote > 0 else {
                    failure = KeyRingError(.io, "cannot write \(temporary): \(errnoText())")
                    return
                }
                done += wrote
            }
        }
        if failure == nil && fsync(fd) != 0 { failure = KeyRingError(.io, "cannot sync \(temporary): \(errnoText())") }
        fchmod(fd, 0o600)
        close(fd)
        if let failure {
            unlink(temporary)
            throw failure
        }
        if exclusive {
            // link() fails if the target exists, which rename() would silently replace.
            guard link(temporary, path) == 0 else {
                let code = errno
                unlink(temporary)
                if code == EEXIST { throw KeyRingError(.exists, "\(path) exists already") }
                throw KeyRingError(.io, "cannot create \(path): \(String(cString: strerror(code)))")
            }
            unlink(temporary)
        } else {
            guard rename(temporary, path) == 0 else {
                unlink(temporary)
                throw KeyRingError(.io, "cannot replace \(path): \(errnoText())")
            }
        }
        syncDirectory(of: path)
    }

    /// Renames `from` to `to` and syncs the directory.
    public static func replace(_ from: String, with to: String) throws {
        guard rename(from, to) == 0 else { throw KeyRingError(.io, "cannot rename \(from): \(errnoText())") }
        syncDirectory(of: to)
    }

    /// Fsyncs the directory holding `path`, so a create or rename in it is durable.
    public static func syncDirectory(of path: String) {
        let directory = (path as NSString).deletingLastPathComponent
        let fd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }
}

extension KeyFile {
    /// Overwrites the file at `path` with zeros, syncs it, unlinks it and syncs its directory, so that no copy of
    /// a replaced key stays behind under that name. Nothing to do when it does not exist.
    public static func destroy(_ path: String) throws {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return }
            throw KeyRingError(.io, "cannot open \(path): \(errnoText())")
        }
        var status = stat()
        var failure: KeyRingError?
        if fstat(fd, &status) == 0 {
            let zeros = [UInt8](repeating: 0, count: max(Int(status.st_size), 1))
            var done = 0
            while done < Int(status.st_size) {
                let wrote = zeros.withUnsafeBytes { write(fd, $0.baseAddress! + done, Int(status.st_size) - done) }
                if wrote < 0 && errno == EINTR { continue }
                guard wrote > 0 else {
                    failure = KeyRingError(.io, "cannot overwrite \(path): \(errnoText())")
                    break
                }
                done += wrote
            }
        }
        if failure == nil && fsync(fd) != 0 { failure = KeyRingError(.io, "cannot sync \(path): \(errnoText())") }
        close(fd)
        if let failure { throw failure }
        guard unlink(path) == 0 else { throw KeyRingError(.io, "cannot unlink \(path): \(errnoText())") }
        syncDirectory(of: path)
    }
}
