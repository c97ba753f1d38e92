import Foundation
import VaultCore
import VaultCrypto

@testable import VaultStore

#if canImport(Glibc)
import Glibc
#endif

/// A fresh directory under /tmp holding `data/` and `keys/` (with a master key), removed on deinit.
final class StoreSandbox: Sendable {
    let root: String
    var data: String { root + "/data" }
    var keys: String { root + "/keys" }

    init() throws {
        var template = Array("/tmp/cv-store-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw StoreError(.unavailable, "mkdtemp failed") }
        root = String(cString: made)
        try KeyRing.createMasterKey(keysDirectory: root + "/keys")
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    func open(_ options: FileStoreOptions = FileStoreOptions()) throws -> EncryptedFileStore {
        try EncryptedFileStore.open(directory: data, keysDirectory: keys, options: options)
    }

    /// Every regular file under the data directory.
    func dataFiles() -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: data)
        var files: [String] = []
        while let name = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: data + "/" + name, isDirectory: &isDirectory)
            if !isDirectory.boolValue { files.append(data + "/" + name) }
        }
        return files
    }

    /// The segment files, oldest first.
    func segmentFiles() -> [String] {
        dataFiles().filter { $0.hasSuffix(".seg") }.sorted()
    }
}

/// Small options for tests: tiny segments, no automatic compaction unless asked.
func testOptions(
    segmentBytes: Int = 64 << 10, checkpointBytes: Int = 1 << 30,
    fileSystem: any StorageFileSystem = SystemFileSystem(),
    clock: any WallClock = SystemClock(), retry: TimeInterval = 0, logger: Logger = .disabled
) -> FileStoreOptions {
    FileStoreOptions(
        segmentBytes: segmentBytes, checkpointBytes: checkpointBytes, automaticCompaction: false,
        writeRetryInterval: retry, fileSystem: fileSystem, clock: clock, logger: logger)
}

/// Reads a file whole.
func fileBytes(_ path: String) -> [UInt8] {
    (try? [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))) ?? []
}

/// Overwrites bytes of a file in place.
func patch(_ path: String, at offset: Int, with bytes: [UInt8]) throws {
    let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
    try handle.seek(toOffset: UInt64(offset))
    try handle.write(contentsOf: Data(bytes))
    try handle.close()
}

/// Appends bytes to a file.
func append(_ path: String, _ bytes: [UInt8]) throws {
    let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
    try handle.seekToEnd()
    try handle.write(contentsOf: Data(bytes))
    try handle.close()
}

/// A file layer that fails writes or syncs with a chosen errno while armed.
final class FaultInjectingFileSystem: StorageFileSystem {
    let base = SystemFileSystem()
    let writeFailure = Locked<Int32?>(nil)
    let syncFailure = Locked<Int32?>(nil)
    /// While set, no file grows past this many bytes (a full disk): a write past it writes what
    /// fits, then fails with ENOSPC.
    let fileSizeLimit = Locked<UInt64?>(nil)

    func openFile(_ path: String, create: Bool) throws -> any StorageFile {
        FaultInjectingFile(base: try base.openFile(path, create: create), owner: self)
    }
    func contentsOfDirectory(_ directory: String) throws -> [String] { try base.contentsOfDirectory(directory) }
    func makeDirectory(_ directory: String) throws { try base.makeDirectory(directory) }
    func removeFile(_ path: String) throws { try base.removeFile(path) }
    func rename(_ source: String, to destination: String) throws { try base.rename(source, to: destination) }
    func syncDirectory(_ directory: String) throws {
        try base.syncDirectory(directory)
        syncedDirectories.withLock { $0.append(directory) }
    }
    /// Every directory synced, in order.
    let syncedDirectories = Locked<[String]>([])
}

final class FaultInjectingFile: StorageFile {
    let base: any StorageFile
    let owner: FaultInjectingFileSystem

    init(base: any StorageFile, owner: FaultInjectingFileSystem) {
        self.base = base
        self.owner = owner
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        try base.read(into: buffer, at: offset)
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        if let code = owner.writeFailure.withLock({ $0 }) {
            // Like a real full disk: part of the data may land before the error.
            try base.write(UnsafeRawBufferPointer(rebasing: bytes[0..<bytes.count / 2]), at: offset)
            throw FileSystemError(code, "write: \(String(cString: strerror(code)))")
        }
        if let limit = owner.fileSizeLimit.withLock({ $0 }), offset + UInt64(bytes.count) > limit {
            let fits = Int(limit > offset ? limit - offset : 0)
            if fits > 0 { try base.write(UnsafeRawBufferPointer(rebasing: bytes[0..<fits]), at: offset) }
            throw FileSystemError(ENOSPC, "write: \(String(cString: strerror(ENOSPC)))")
        }
        try base.write(bytes, at: offset)
    }

    func sync() throws {
        if let code = owner.syncFailure.withLock({ $0 }) {
            throw FileSystemError(code, "fdatasync: \(String(cString: strerror(code)))")
        }
        try base.sync()
    }

    func truncate(to size: UInt64) throws { try base.truncate(to: size) }
    func allocate(_ size: UInt64) throws {
        if let limit = owner.fileSizeLimit.withLock({ $0 }), size > limit {
            throw FileSystemError(ENOSPC, "fallocate: \(String(cString: strerror(ENOSPC)))")
        }
        try base.allocate(size)
    }
    func size() throws -> UInt64 { try base.size() }
}

/// A value shared between test tasks, behind a lock.
final class Shared<Value: Sendable>: Sendable {
    private let storage: Locked<Value>
    init(_ value: Value) { storage = Locked(value) }
    var value: Value { storage.withLock { $0 } }
    func update(_ body: (inout Value) -> Void) { storage.withLock { body(&$0) } }
}
