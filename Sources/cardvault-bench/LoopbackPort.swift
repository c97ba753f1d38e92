import Foundation

/// Loopback TCP ports for the servers the bench starts.
enum LoopbackPort {
    /// A port free on 127.0.0.1 right now (the kernel picks it; the socket is closed again).
    static func free() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchFailure("socket() failed") }
        defer { close(fd) }
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw BenchFailure("bind(127.0.0.1:0) failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw BenchFailure("getsockname failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// True when something accepts connections on 127.0.0.1:`port`.
    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return connected == 0
    }

    /// Waits until 127.0.0.1:`port` accepts connections, or throws after `timeout` seconds
    /// (or as soon as `alive` says the server has exited).
    static func waitUntilAccepting(_ port: Int, timeout: Double, what: String, alive: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if accepts(port) { return }
            guard alive() else { throw BenchFailure("\(what) exited before accepting connections") }
            usleep(20_000)
        }
        throw BenchFailure("\(what) did not accept connections on port \(port) within \(Int(timeout)) s")
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
