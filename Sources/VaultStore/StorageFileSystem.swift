import Foundation
public import VaultCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed file operation, with the `errno` it came from. Equal by code.
public struct FileSystemError: CodedError, Equatable {
    /// The `errno` value (`ENOSPC`, `EIO`, ...).
    public let code: Int32
    public let message: String
    public let location: SourceLocation

    public init(_ code: Int32, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.location = SourceLocation(file: file, line: line)
    }

    /// The error for the current `errno` of an operation on `path`.
    static func current(_ operation: String, _ path: String) -> FileSystemError {
        let code = errno
        return FileSystemError(code, "\(operation) \(path): \(String(cString: strerror(code)))")
    }

    public static func == (lhs: FileSystemError, rhs: FileSystemError) -> Bool { lhs.code == rhs.code }
}

/// One open file of the store: positioned reads and writes, sync, truncate.
public protocol StorageFile: Sendable {
    /// Reads up to `buffer.count` bytes at `offset`; returns the bytes read (fewer at end of file).
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int
    /// Writes all of `bytes` at `offset`.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws
    /// Makes everything written so far durable (fdatasync).
    func sync() throws
    /// Cuts or extends the file to `size` bytes.
    func truncate(to size: UInt64) throws
    /// Reserves disk blocks for the first `size` bytes (posix_fallocate), growing the file to at least `size`;
    /// fails with `ENOSPC` when they do not fit.
    func allocate(_ size: UInt64) throws
    /// The current size in bytes.
    func size() throws -> UInt64
}

/// The file operations the encrypted store performs, injectable so that tests can make writes
/// fail (disk full, I/O error) exactly where they choose.
public protocol StorageFileSystem: Sendable {
    /// Opens `path` for reading and writing; creates it with mode 0600 when `create` is set.
    func openFile(_ path: String, create: Bool) throws -> any StorageFile
    /// Names in `directory` (not paths), without `.` and `..`.
    func contentsOfDirectory(_ directory: String) throws -> [String]
    /// Creates `directory` with mode 0700 unless it exists.
    func makeDirectory(_ directory: String) throws
    /// Removes a file.
    func removeFile(_ path: String) throws
    /// Renames `source` over `destination`.
    func rename(_ source: String, to destination: String) throws
    /// Makes creations, renames and removals in `directory` durable.
    func syncDirectory(_ directory: String) throws
}

extension StorageFile {
    /// Reads exactly `count` bytes at `offset`, or fewer at end of file.
    func read(count: Int, at offset: UInt64) throws -> [UInt8] {
        var got = 0
        let bytes = try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            got = try read(into: UnsafeMutableRawBufferPointer(buffer), at: offset)
            initialized = got
        }
        return bytes
    }
}

/// The real file system through POSIX calls.
public struct SystemFileSystem: StorageFileSystem {
    public init() {}

    public func openFile(_ path: String, create: Bool) throws -> any StorageFile {
        let fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0o600)
        guard fd >= 0 else { throw FileSystemError.current("open", path) }
        return SystemFile(descriptor: fd, path: path)
    }

    public func contentsOfDirectory(_ directory: String) throws -> [String] {
        guard let handle = opendir(directory) else { throw FileSystemError.current("opendir", directory) }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    public func makeDirectory(_ directory: String) throws {
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { throw FileSystemError.current("mkdir", directory) }
    }

    public func removeFile(_ path: String) throws {
        if unlink(path) != 0 && errno != ENOENT { throw FileSystemError.current("unlink", path) }
    }

    public func rename(_ source: String, to destination: String) throws {
        if Glibc.rename(source, destination) != 0 { throw FileSystemError.current("rename", source) }
    }

    public func syncDirectory(_ directory: String) throws {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw FileSystemError.current("open", directory) }
        defer { close(fd) }
        if fsync(fd) != 0 { throw FileSystemError.current("fsync", directory) }
    }
}

/// A file descriptor, closed when the last reference goes away (so a reader may finish with a
/// segment that compaction has already unlinked).
final class SystemFile: StorageFile {
    let descriptor: Int32
    let path: String

    init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { close(descriptor) }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        var done = 0
        while done < buffer.count {
            let got = pread(descriptor, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            if got < 0 {
                if errno == EINTR { continue }
                throw FileSystemError.current("read", path)
            }
            if got == 0 { break }
            done += got
        }
        return done
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        var done = 0
        while done < bytes.count {
            let wrote = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if wrote < 0 {
                if errno == EINTR { continue }
                throw FileSystemError.current("write", path)
            }
            done += wrote
        }
    }

    func sync() throws {
        if fdatasync(descriptor) != 0 { throw FileSystemError.current("fdatasync", path) }
    }

    func truncate(to size: UInt64) throws {
        if ftruncate(descriptor, off_t(size)) != 0 { throw FileSystemError.current("ftruncate", path) }
    }

    func allocate(_ size: UInt64) throws {
        // posix_fallocate returns the error rather than setting errno.
        let code = posix_fallocate(descriptor, 0, off_t(size))
        guard code == 0 else { throw FileSystemError(code, "fallocate \(path): \(String(cString: strerror(code)))") }
    }

    func size() throws -> UInt64 {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw FileSystemError.current("fstat", path) }
        return UInt64(status.st_size)
    }
}
