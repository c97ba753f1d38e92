import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A response read off a socket.
public struct RawResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(String, String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    public var text: String { String(decoding: body, as: UTF8.self) }
}

/// Runs blocking socket work on its own thread, never on a thread of the concurrency pool (which
/// the server's async handlers need).
public func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.start()
    }
}

/// A plain TCP client that writes raw bytes and parses HTTP/1.1 responses, so tests can check
/// connection reuse and send requests no ordinary client would.
public final class RawHTTPClient {
    /// The socket; -1 once closed (so that it is closed exactly once: a second `close` of a number the kernel
    /// has since given to another socket, such as a test server's listener, would close that one).
    private var fd: Int32
    private var buffer: [UInt8] = []

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public init(port: Int, timeoutSeconds: Int = 5) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            fd = -1
            throw Failure(description: "connect failed: \(code)")
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// One request on a fresh connection (`Connection: close`, a `Content-Length` for any body or method but
    /// GET), and its response. Blocking: call it from a thread of its own (``blocking(_:)``) in async tests.
    public static func request(
        port: Int, method: String = "GET", path: String, headers: [String: String] = [:], body: String = "",
        timeoutSeconds: Int = 5
    ) throws -> RawResponse {
        let client = try RawHTTPClient(port: port, timeoutSeconds: timeoutSeconds)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method != "GET" { head += "Content-Length: \(body.utf8.count)\r\n" }
        client.send(head + "\r\n" + body)
        return try client.readResponse()
    }

    /// Writes `bytes` (ignoring a peer that closed early).
    public func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written <= 0 { return }
            offset += written
        }
    }

    public func send(_ text: String) { send(Array(text.utf8)) }

    /// Reads one response (by Content-Length, or to the end of the stream).
    public func readResponse() throws -> RawResponse {
        var headerEnd: Int?
        while headerEnd == nil {
            headerEnd = find([13, 10, 13, 10])
            if headerEnd == nil {
                guard try fill() else { throw Failure(description: "connection closed before a response") }
            }
        }
        let head = String(decoding: buffer[..<headerEnd!], as: UTF8.self)
        buffer.removeFirst(headerEnd! + 4)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw Failure(description: "bad status line: \(head)")
        }
        let headers: [(String, String)] = lines.compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var response = RawResponse(status: status, headers: headers, body: [])
        if status == 204 || status == 304 || status < 200 {
            return response
        }
        if let length = response.header("Content-Length").flatMap({ Int($0) }) {
            while buffer.count < length {
                guard try fill() else { throw Failure(description: "short body") }
            }
            response.body = Array(buffer[..<length])
            buffer.removeFirst(length)
        } else {
            while try fill() {}
            response.body = buffer
            buffer = []
        }
        return response
    }

    /// True when the server closed the connection (a read returns end-of-stream).
    public func isClosedByPeer() -> Bool {
        guard buffer.isEmpty else { return false }
        return (try? fill()) == false
    }

    /// Reads more bytes; false at end of stream.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count < 0 {
            if errno == ECONNRESET { return false }
            throw Failure(description: "read failed or timed out: \(errno)")
        }
        if count == 0 { return false }
        buffer.append(contentsOf: chunk[..<count])
        return true
    }

    private func find(_ pattern: [UInt8]) -> Int? {
        guard buffer.count >= pattern.count else { return nil }
        for start in 0...(buffer.count - pattern.count) where buffer[start] == pattern[0] {
            if Array(buffer[start..<start + pattern.count]) == pattern { return start }
        }
        return nil
    }
}
