import Foundation

/// A minimal blocking HTTP/1.1 client on one keep-alive loopback connection, for the bench's set-up
/// steps (token, users, wallets, cards) before wrk takes over. Not used for any timed figure.
final class LoopbackHTTPClient {
    /// One answer: status and body.
    struct Response {
        var status: Int
        var body: String

        /// The body as a JSON object (empty when it is not one).
        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
        }

        /// A string field of the JSON body.
        func field(_ name: String) throws -> String {
            let object = json
            guard let value = object[name] as? String else {
                // Field names only: a successful answer carries access keys and tokens.
                let fields =
                    object.isEmpty ? "not a JSON object" : "fields " + object.keys.sorted().joined(separator: ", ")
                throw BenchFailure("answer \(status) has no \(name) (\(fields))")
            }
            return value
        }
    }

    private let port: Int
    private var socket: Int32 = -1
    private var buffer: [UInt8] = []

    init(port: Int) {
        self.port = port
    }

    deinit {
        if socket >= 0 { close(socket) }
    }

    /// Sends one request and waits for its answer; reconnects once if the connection was closed.
    func send(
        _ method: String, _ path: String, headers: [String: String] = [:], body: String = "",
        contentType: String = "application/json"
    ) throws -> Response {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: \(body.utf8.count)\r\n"
        if !body.isEmpty { text += "Content-Type: \(contentType)\r\n" }
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        text += "\r\n" + body
        for attempt in 0..<2 {
            do {
                try connectIfNeeded()
                try write(Array(text.utf8))
                return try readResponse()
            } catch {
                if socket >= 0 { close(socket) }
                socket = -1
                buffer.removeAll()
                if attempt == 1 { throw error }
            }
        }
        throw BenchFailure("unreachable")
    }

    private func connectIfNeeded() throws {
        guard socket < 0 else { return }
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchFailure("socket() failed") }
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
            close(fd)
            throw BenchFailure("cannot connect to 127.0.0.1:\(port)")
        }
        socket = fd
    }

    private func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes {
                Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { throw BenchFailure("send failed") }
            sent += count
        }
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw BenchFailure("connection closed") }
        buffer += chunk[0..<count]
    }

    private func readResponse() throws -> Response {
        let separator: [UInt8] = [13, 10, 13, 10]
        var headerEnd: Int?
        while headerEnd == nil {
            if buffer.count >= 4 {
                for index in 0...(buffer.count - 4) where buffer[index..<index + 4].elementsEqual(separator) {
                    headerEnd = index
                    break
                }
            }
            if headerEnd == nil { try fill() }
        }
        let head = String(decoding: buffer[0..<headerEnd!], as: UTF8.self)
        let lines = head.split(separator: "\r\n")
        guard let statusLine = lines.first, let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "")
        else { throw BenchFailure("bad status line") }
        var length = 0
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "content-length" {
                length = Int(parts[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
            if parts.count == 2, parts[0].lowercased() == "transfer-encoding" {
                throw BenchFailure("chunked answers are not supported by the set-up client")
            }
        }
        let bodyStart = headerEnd! + 4
        while buffer.count < bodyStart + length { try fill() }
        let body = String(decoding: buffer[bodyStart..<bodyStart + length], as: UTF8.self)
        buffer.removeFirst(bodyStart + length)
        return Response(status: status, body: body)
    }
}
