import Foundation
public import VaultCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A JSON value on the admin channel.
public enum AdminValue: Sendable, Equatable, Codable {
    case null
    case bool(Bool)
    case int(Int)
    case string(String)
    case array([AdminValue])
    case object([String: AdminValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([AdminValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: AdminValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    public subscript(key: String) -> AdminValue? {
        if case .object(let fields) = self { return fields[key] }
        return nil
    }

    public var intValue: Int? {
        if case .int(let value) = self { return value }
        return nil
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var arrayValue: [AdminValue]? {
        if case .array(let value) = self { return value }
        return nil
    }
}

/// A failure reported over the admin channel: a code and a message safe to show an operator.
public struct AdminError: CodedError, Equatable {
    public let code: String
    public let message: String
    public let location: SourceLocation

    public init(_ code: String, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.location = SourceLocation(file: file, line: line)
    }

    public static func == (lhs: AdminError, rhs: AdminError) -> Bool { lhs.code == rhs.code }

    /// Nothing listens on the socket (the daemon is not running).
    public static let notRunning = "notRunning"
    /// No handler has this command name.
    public static let unknownCommand = "unknownCommand"
    /// The request or a reply is not valid JSON of the expected shape.
    public static let badMessage = "badMessage"
}

/// Who sent an admin command: the peer of the admin socket connection (`SO_PEERCRED`), or this process.
public struct AdminCaller: Sendable, Equatable {
    /// The peer's user id; nil for a command run in this process (the CLI on the files directly).
    public let uid: UInt32?
    public let pid: Int32?

    public init(uid: UInt32?, pid: Int32?) {
        self.uid = uid
        self.pid = pid
    }

    /// A command run in this process.
    public static let inProcess = AdminCaller(uid: getuid(), pid: getpid())

    /// The credentials of the peer of the Unix socket `fd`.
    static func peer(of fd: Int32) -> AdminCaller {
        // Linux's `struct ucred` (pid, uid, gid), which Glibc's module does not export.
        struct PeerCredentials {
            var pid: Int32 = 0
            var uid: UInt32 = 0
            var gid: UInt32 = 0
        }
        var credentials = PeerCredentials()
        var length = socklen_t(MemoryLayout<PeerCredentials>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else {
            return AdminCaller(uid: nil, pid: nil)
        }
        return AdminCaller(uid: credentials.uid, pid: credentials.pid)
    }
}

/// Sends progress lines while a command runs (a rewrap's counts, for example), and tells who asked.
public struct AdminProgress: Sendable {
    private let emit: @Sendable (AdminValue) -> Void
    /// The command's sender.
    public let caller: AdminCaller

    public init(caller: AdminCaller = .inProcess, _ emit: @escaping @Sendable (AdminValue) -> Void) {
        self.caller = caller
        self.emit = emit
    }

    /// Sends one progress value to the caller.
    public func report(_ value: AdminValue) { emit(value) }

    /// A sink that drops progress.
    public static let ignored = AdminProgress { _ in }
}

/// A named admin command: arguments in, a result out, progress on the way.
public typealias AdminHandler =
    @Sendable (_ arguments: [String: AdminValue], _ progress: AdminProgress) async throws ->
    AdminValue

/// The registry of admin commands. Open: any part of the daemon registers its own
/// (`keys.rotate` from the store, `clients.add` from the merchant API, ...).
public final class AdminHandlers: Sendable {
    private let handlers = Locked<[String: AdminHandler]>([:])

    public init() {}

    /// Registers (or replaces) the handler of `command`.
    public func register(_ command: String, _ handler: @escaping AdminHandler) {
        handlers.withLock { $0[command] = handler }
    }

    /// The registered command names, sorted.
    public var commands: [String] { handlers.withLock { $0.keys.sorted() } }

    /// Runs `command` in this process (what the server does for each request, and what the CLI
    /// does on the files directly when no daemon runs).
    public func invoke(
        _ command: String, arguments: [String: AdminValue] = [:], progress: AdminProgress = .ignored
    )
        async throws -> AdminValue
    {
        guard let handler = handlers.withLock({ $0[command] }) else {
            throw AdminError(AdminError.unknownCommand, "unknown admin command '\(command)'")
        }
        return try await handler(arguments, progress)
    }
}

/// The wire format: one JSON object per line.
///
///     → {"command":"keys.rotate","arguments":{}}
///     ← {"progress":{"done":100,"total":500}}        (zero or more)
///     ← {"ok":true,"result":{...}}  or  {"ok":false,"code":"...","error":"..."}
struct AdminMessage: Codable {
    var command: String?
    var arguments: [String: AdminValue]?
    var progress: AdminValue?
    var ok: Bool?
    var result: AdminValue?
    var code: String?
    var error: String?

    func line() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array((try? encoder.encode(self)) ?? Data("{\"ok\":false,\"error\":\"unencodable reply\"}".utf8)) + [
            0x0A
        ]
    }
}

/// A Unix stream socket address for `path`.
private func withSocketAddress<Result>(
    _ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Result
) throws -> Result {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    let capacity = MemoryLayout.size(ofValue: address.sun_path)
    guard bytes.count < capacity else {
        throw AdminError(AdminError.badMessage, "socket path \(path) is longer than \(capacity - 1) bytes")
    }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        raw.copyBytes(from: bytes)
        raw[bytes.count] = 0
    }
    return withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
}

private func makeSocket() throws -> Int32 {
    #if canImport(Glibc)
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    #else
    let fd = socket(AF_UNIX, SOCK_STREAM, 0)
    #endif
    guard fd >= 0 else { throw AdminError("io", "cannot create a socket: \(String(cString: strerror(errno)))") }
    return fd
}

/// Writes all of `bytes` to a socket.
private func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBytes { raw in
        var done = 0
        while done < raw.count {
            let wrote = send(fd, raw.baseAddress! + done, raw.count - done, Int32(MSG_NOSIGNAL))
            if wrote < 0 && errno == EINTR { continue }
            guard wrote > 0 else { return false }
            done += wrote
        }
        return true
    }
}

/// Reads newline-terminated lines from a socket.
private struct LineReader {
    let fd: Int32
    var buffer: [UInt8] = []

    mutating func next() -> [UInt8]? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let got = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { return nil }
            buffer += chunk[0..<got]
            if buffer.count > 1 << 20 { return nil }
        }
    }
}

/// The daemon's admin channel: a Unix socket (mode 0600) answering one JSON request per line
/// with the handler registered under its command name. Run it as a ``Service`` of the daemon's group (it
/// starts with the group and stops before the store is closed), or ``start()`` and ``stop()`` it directly.
///
/// Blocking socket calls run on threads of its own (one accepting, one reading per connection), never on the
/// concurrency pool; each request's handler runs as a task, and a connection answers its requests in order.
public final class AdminSocketServer: Service {
    public let name = "admin-socket"
    public let path: String
    public let handlers: AdminHandlers
    private let logger: Logger
    private let state = Locked(ListenState())

    private struct ListenState {
        var fd: Int32 = -1
        var loopEnded = false
        var loopWaiter: CheckedContinuation<Void, Never>?
        /// Connections being answered, and who waits for the last one to finish.
        var connections: Set<Int32> = []
        var connectionsWaiter: CheckedContinuation<Void, Never>?
    }

    public init(path: String, handlers: AdminHandlers, logger: Logger = .disabled) {
        self.path = path
        self.handlers = handlers
        self.logger = logger
    }

    /// Serves from the group's start (or from an earlier ``start()``) until its shutdown, then stops and removes
    /// the socket file.
    public func run() async throws {
        if state.withLock({ $0.fd < 0 }) { try start() }
        await untilCancelled()
        await stop()
    }

    /// Binds the socket and starts answering on a background thread.
    /// - Throws: ``AdminError`` if the path is taken by a live server or cannot be bound.
    public func start() throws {
        if access(path, F_OK) == 0 {
            if AdminClient.isServing(path: path) {
                throw AdminError("inUse", "another process answers on \(path)")
            }
            unlink(path)  // left behind by a process that died
        }
        let fd = try makeSocket()
        // The socket file is born owner-only (0600): bind under a umask that takes group and
        // other bits (and execute) away, so there is no moment in which another user could
        // connect, as there was with a chmod after bind. umask is process-wide; this runs at start,
        // after the store made its directories (every file the store creates asks for 0600 itself).
        let previousMask = umask(0o177)
        let bound = try withSocketAddress(path) { bind(fd, $0, $1) }
        let bindError = errno
        umask(previousMask)
        errno = bindError
        guard bound == 0, listen(fd, 16) == 0 else {
            let text = String(cString: strerror(errno))
            close(fd)
            throw AdminError("io", "cannot listen on \(path): \(text)")
        }
        state.withLock { $0 = ListenState(fd: fd) }
        Thread.named("cv-admin") { [self] in acceptLoop(fd) }.start()
        logger.info("admin socket listening", ["path": .string(path)])
    }

    /// Stops accepting, waits for the accept loop to end, ends every connection after the request it is
    /// answering (a running `keys.rewrap` finishes first), then closes and removes the socket file. When it
    /// returns no admin command runs any more, so the store can be closed.
    public func stop() async {
        guard let fd = state.withLock({ $0.fd >= 0 ? $0.fd : nil }) else { return }
        // shutdown(2) wakes the blocked accept(2); the descriptor is closed only after the loop has left it, so
        // the number cannot be reused under a running accept.
        shutdown(fd, Int32(SHUT_RDWR))
        await withCheckedContinuation { (ended: CheckedContinuation<Void, Never>) in
            let already = state.withLock { state -> Bool in
                if state.loopEnded { return true }
                state.loopWaiter = ended
                return false
            }
            if already { ended.resume() }
        }
        // No new connection can come; reading ends on the open ones, so each answers what it has read and closes.
        await withCheckedContinuation { (idle: CheckedContinuation<Void, Never>) in
            let open = state.withLock { state -> Set<Int32>? in
                if state.connections.isEmpty { return nil }
                state.connectionsWaiter = idle
                return state.connections
            }
            guard let open else { return idle.resume() }
            for connection in open { shutdown(connection, Int32(SHUT_RD)) }
        }
        state.withLock { $0 = ListenState() }
        close(fd)
        unlink(path)
    }

    private func acceptLoop(_ fd: Int32) {
        while true {
            let connection = accept(fd, nil, nil)
            if connection < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                break
            }
            state.withLock { _ = $0.connections.insert(connection) }
            let requests = AsyncStream<AdminMessage?>.makeStream()
            Thread.named("cv-admin-conn") { Self.readRequests(connection, into: requests.continuation) }.start()
            let caller = AdminCaller.peer(of: connection)
            Task { [self] in await answer(connection, caller: caller, requests.stream) }
        }
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.loopEnded = true
            defer { state.loopWaiter = nil }
            return state.loopWaiter
        }
        waiter?.resume()
    }

    /// Reads request lines until the peer closes (its own thread); nil stands for an unreadable line.
    private static func readRequests(_ fd: Int32, into requests: AsyncStream<AdminMessage?>.Continuation) {
        var reader = LineReader(fd: fd)
        while let line = reader.next() {
            requests.yield(try? JSONDecoder().decode(AdminMessage.self, from: Data(line)))
        }
        requests.finish()
    }

    /// Answers a connection's requests in order, then closes it.
    private func answer(_ fd: Int32, caller: AdminCaller, _ requests: AsyncStream<AdminMessage?>) async {
        defer {
            close(fd)  // the reader thread has finished the stream, so it no longer reads this descriptor
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.connections.remove(fd)
                guard state.connections.isEmpty else { return nil }
                defer { state.connectionsWaiter = nil }
                return state.connectionsWaiter
            }
            waiter?.resume()
        }
        var writable = true
        for await request in requests where writable {
            guard let request, let command = request.command else {
                _ = writeAll(
                    fd, AdminMessage(ok: false, code: AdminError.badMessage, error: "expected {\"command\":...}").line()
                )
                continue
            }
            let writeLock = Locked(())
            let progress = AdminProgress(caller: caller) { value in
                writeLock.withLock { _ in _ = writeAll(fd, AdminMessage(progress: value).line()) }
            }
            let message: AdminMessage
            do {
                let result = try await handlers.invoke(command, arguments: request.arguments ?? [:], progress: progress)
                message = AdminMessage(ok: true, result: result)
            } catch let error as any CodedError {
                message = AdminMessage(ok: false, code: "\(error.code)", error: error.message)
            } catch {
                message = AdminMessage(ok: false, code: "internal", error: "the command failed")
                logger.error("admin command failed", ["command": .string(command), "error": .string("\(error)")])
            }
            logger.info(
                "admin command",
                [
                    "command": .string(command), "ok": .bool(message.ok == true),
                    "uid": .int(caller.uid.map { Int($0) } ?? -1),
                ])
            if !writeLock.withLock({ _ in writeAll(fd, message.line()) }) {
                // The peer went away: stop reading too; the loop drains what the reader already queued.
                writable = false
                shutdown(fd, Int32(SHUT_RDWR))
            }
        }
    }
}

/// The CLI's end of the admin channel.
public struct AdminClient: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    /// True when a server accepts connections on `path`.
    public static func isServing(path: String) -> Bool {
        guard access(path, F_OK) == 0, let fd = try? makeSocket() else { return false }
        defer { close(fd) }
        return (try? withSocketAddress(path) { connect(fd, $0, $1) }) == 0
    }

    /// Sends one command and waits for its result, passing progress values to `progress`.
    /// - Throws: ``AdminError``: `notRunning` when nothing listens, otherwise the server's code and message.
    public func call(
        _ command: String, arguments: [String: AdminValue] = [:], progress: ((AdminValue) -> Void)? = nil
    ) throws -> AdminValue {
        let fd = try makeSocket()
        defer { close(fd) }
        guard try withSocketAddress(path, { connect(fd, $0, $1) }) == 0 else {
            throw AdminError(AdminError.notRunning, "no daemon answers on \(path)")
        }
        guard writeAll(fd, AdminMessage(command: command, arguments: arguments).line()) else {
            throw AdminError(AdminError.notRunning, "the daemon closed \(path)")
        }
        var reader = LineReader(fd: fd)
        while let line = reader.next() {
            guard let message = try? JSONDecoder().decode(AdminMessage.self, from: Data(line)) else {
                throw AdminError(AdminError.badMessage, "the daemon sent an unreadable reply")
            }
            if let value = message.progress {
                progress?(value)
                continue
            }
            if message.ok == true { return message.result ?? .null }
            throw AdminError(message.code ?? "failed", message.error ?? "the command failed")
        }
        throw AdminError(AdminError.badMessage, "the daemon closed the connection without a reply")
    }
}
