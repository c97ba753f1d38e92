import Foundation
public import VaultCore

/// The durable record of key custody events (shares accepted or refused, seal, unseal, rekey, rotation): one
/// JSON object per line in `<data>/custody-audit.log`, appended and fsynced before the command answers. It never
/// holds a share, a key or a PIN: the event, the time, the caller's uid and pid, a share's index, the outcome.
public final class CustodyAuditLog: Sendable {
    /// The file's name inside the data directory.
    public static let fileName = "custody-audit.log"

    public let path: String
    private let clock: any WallClock
    private let lock = Locked(())

    public init(dataDirectory: String, clock: any WallClock = SystemClock()) {
        path = (dataDirectory as NSString).appendingPathComponent(Self.fileName)
        self.clock = clock
    }

    /// Appends one event and syncs it.
    /// - Throws: ``AdminError`` when the record cannot be written durably (the action is then refused).
    public func record(_ event: String, caller: AdminCaller, _ fields: [String: AdminValue] = [:]) throws {
        var entry = fields
        entry["event"] = .string(event)
        entry["time"] = .string(ISO8601DateFormatter().string(from: clock.now))
        entry["uid"] = caller.uid.map { .int(Int($0)) } ?? .null
        entry["pid"] = caller.pid.map { .int(Int($0)) } ?? .null
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var line = try encoder.encode(AdminValue.object(entry))
        line.append(UInt8(ascii: "\n"))
        try lock.withLock { _ in
            let directory = (path as NSString).deletingLastPathComponent
            if mkdir(directory.isEmpty ? "." : directory, 0o700) != 0 && errno != EEXIST {
                throw AdminError("io", "cannot create \(directory): \(String(cString: strerror(errno)))")
            }
            let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw AdminError("io", "cannot open \(path): \(String(cString: strerror(errno)))") }
            defer { close(fd) }
            let written = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard written == line.count, fsync(fd) == 0 else {
                throw AdminError("io", "cannot append to \(path): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Every event recorded so far, oldest first.
    public func events() throws -> [AdminValue] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        return try data.split(separator: UInt8(ascii: "\n")).map { try JSONDecoder().decode(AdminValue.self, from: $0) }
    }
}
