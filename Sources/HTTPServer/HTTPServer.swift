import CHTTPShims
import CMicroHTTPD
import Foundation
import Synchronization
public import VaultCore

/// Why the server could not start.
public struct ServerError: CodedError, Equatable {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let invalidAddress = Code("invalid_address")
        public static let startFailed = Code("start_failed")
        public static let alreadyRunning = Code("already_running")
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public static func == (lhs: ServerError, rhs: ServerError) -> Bool { lhs.code == rhs.code }
}

/// An HTTP/1.1 server over GNU libmicrohttpd.
///
/// Requests are read completely (up to ``ServerConfiguration/maxBodyBytes``) before the handler
/// runs; handlers are `async` and may wait without holding a thread: in
/// ``ThreadingMode/eventLoop`` mode the connection is suspended while the handler's task runs and
/// resumed when it answers. Every response carries `X-Request-Id`; every answered request gives one
/// log line (request id, method, route pattern, status, duration) and counts in ``HTTPMetrics``.
///
/// Threading: libmicrohttpd's internal epoll loop on a pool of ``ServerConfiguration/threads``
/// threads, with suspend/resume for async handlers. Measured on 2 cores (wrk -t2 -c64, busy
/// machine), CPU per request: async handler 50 µs on the event loop vs 103 µs thread-per-connection;
/// a handler waiting on a group-committed fsync 80 µs vs 129 µs at the same throughput. The hop to
/// the concurrency pool costs about 25 µs per request, so cheap routes that never wait (health,
/// metrics) use ``Router/addImmediate(_:_:handler:)`` and run on the event-loop thread (25 µs).
///
/// Run it as an ``HTTPService`` in a daemon's ``ServiceGroup`` (it returns once in-flight requests are answered
/// after the group is shut down), or call ``start()`` and ``shutdown()`` directly in tests.
public final class HTTPServer: Sendable {
    public let configuration: ServerConfiguration
    let core: ServerCore
    private let running = Locked<RunningDaemon?>(nil)

    /// - Parameters:
    ///   - configuration: address, limits, threading and TLS.
    ///   - router: the routes; fixed once the server exists.
    ///   - logger: request lines and errors go here.
    ///   - metrics: where per-route counts and latencies are recorded.
    public init(
        configuration: ServerConfiguration = ServerConfiguration(),
        router: Router,
        logger: Logger,
        metrics: HTTPMetrics = HTTPMetrics()
    ) {
        self.configuration = configuration
        self.core = ServerCore(configuration: configuration, router: router, logger: logger, metrics: metrics)
    }

    deinit {
        if let daemon = running.withLock({ $0.take() }) {
            daemon.stop()
        }
    }

    /// The bound port while running (the real one when configured with port 0), else 0.
    public var port: Int { running.withLock { $0?.port ?? 0 } }

    /// Binds and starts serving on libmicrohttpd's threads; returns at once.
    ///
    /// - Throws: ``ServerError`` when the address is invalid or cannot be bound, or TLS material is
    ///   rejected.
    public func start() throws(ServerError) {
        try running.withLock { (current: inout RunningDaemon?) throws(ServerError) in
            guard current == nil else { throw ServerError(.alreadyRunning, "the server is already running") }
            current = try RunningDaemon(configuration: configuration, core: core)
        }
        core.draining.store(false, ordering: .relaxed)
    }

    /// Stops accepting connections, lets in-flight requests finish (up to the grace period), then
    /// closes every connection. Responses sent while draining carry `Connection: close`.
    public func shutdown() async {
        guard let daemon = running.withLock({ $0.take() }) else { return }
        core.draining.store(true, ordering: .relaxed)
        daemon.quiesce()
        let deadline = ContinuousClock.now + .seconds(configuration.shutdownGracePeriodSeconds)
        while core.inFlight.load(ordering: .acquiring) > 0 && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        if core.suspended.load(ordering: .acquiring) > 0 {
            // libmicrohttpd cannot stop with suspended connections; the process is about to exit.
            core.logger.warning(
                "handlers still running after the shutdown grace period",
                ["handlers": .int(core.suspended.load(ordering: .relaxed))]
            )
            daemon.abandon()
            return
        }
        daemon.stop()
    }
}

/// The server as a ``Service``: binds, reports the bound port, serves until its task is cancelled (the
/// application's ``ServiceGroup`` does that on SIGTERM or SIGINT), then drains in-flight requests and returns.
/// Signals are the application's, never the server's.
public struct HTTPService: Service {
    public let name = "http"
    public let server: HTTPServer
    private let onStarted: @Sendable (Int) async -> Void

    /// - Parameter onStarted: called with the bound port once the server accepts connections (and only then: a
    ///   failed bind throws from ``run()`` without calling it).
    public init(server: HTTPServer, onStarted: @escaping @Sendable (Int) async -> Void = { _ in }) {
        self.server = server
        self.onStarted = onStarted
    }

    public func run() async throws {
        try server.start()
        await onStarted(server.port)
        await untilCancelled()
        server.core.logger.notice("draining HTTP connections")
        await server.shutdown()
    }
}

/// A started libmicrohttpd daemon, the listening socket that feeds it and the C memory it reads while it runs.
/// Unchecked Sendable: it owns C memory (the daemon handle, the listener, its settings and strings) that
/// libmicrohttpd reads on its own threads; Swift starts, quiesces and stops it only under ``HTTPServer``'s `running`
/// lock.
///
/// The listening socket is CardVault's own (`cv_listener`): a thread accepts and hands each connection to
/// libmicrohttpd, and quiescing shuts the socket down. libmicrohttpd's own `MHD_quiesce_daemon` is never called: on
/// an epoll daemon with internal threads it races its threads' removal of the socket from their epoll sets, and the
/// loser aborts the process ("Failed to remove listen FD from epoll set", an open libmicrohttpd defect, seen in CI).
final class RunningDaemon: @unchecked Sendable {
    let pointer: OpaquePointer
    let port: Int
    private let settings: UnsafeMutablePointer<cv_mhd_settings>
    private let cStrings: [UnsafeMutablePointer<CChar>]
    private let core: ServerCore
    private let listener: OpaquePointer

    init(configuration: ServerConfiguration, core: ServerCore) throws(ServerError) {
        self.core = core
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE
        var found: UnsafeMutablePointer<addrinfo>?
        let host = configuration.host == "localhost" ? "127.0.0.1" : configuration.host
        guard (0...65535).contains(configuration.port),
            getaddrinfo(host, String(configuration.port), &hints, &found) == 0, let first = found
        else {
            throw ServerError(
                .invalidAddress, "cannot resolve listen address \(configuration.host):\(configuration.port)")
        }
        defer { freeaddrinfo(found) }
        let socket = cv_listener_open(first.pointee.ai_addr, first.pointee.ai_addrlen, 1024)
        guard socket >= 0 else {
            throw ServerError(
                .startFailed,
                "cannot listen on \(configuration.host):\(configuration.port) (\(String(cString: strerror(errno))))")
        }

        let settings = UnsafeMutablePointer<cv_mhd_settings>.allocate(capacity: 1)
        settings.initialize(to: cv_mhd_settings())
        var flags: UInt32
        switch configuration.threadingMode {
        case .eventLoop:
            flags =
                MHD_USE_EPOLL.rawValue | MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
                | MHD_USE_TURBO.rawValue
            settings.pointee.thread_pool_size = UInt32(max(1, configuration.threads))
        case .threadPerConnection:
            flags =
                MHD_USE_THREAD_PER_CONNECTION.rawValue | MHD_USE_INTERNAL_POLLING_THREAD.rawValue
                | MHD_USE_POLL.rawValue | MHD_USE_ITC.rawValue
        }
        var strings: [UnsafeMutablePointer<CChar>] = []
        func keep(_ text: String) -> UnsafePointer<CChar> {
            let copy = strdup(text)!
            strings.append(copy)
            return UnsafePointer(copy)
        }
        if let tls = configuration.tls {
            flags |= MHD_USE_TLS.rawValue
            settings.pointee.tls_certificate_pem = keep(tls.certificatePEM)
            settings.pointee.tls_key_pem = keep(tls.privateKeyPEM.unsafeRevealed)
            settings.pointee.tls_priorities = keep(tls.priorities)
            if let clientCA = tls.clientCAPEM {
                settings.pointee.tls_trust_pem = keep(clientCA)
            }
        }
        settings.pointee.flags = flags
        settings.pointee.connection_timeout = UInt32(max(0, configuration.connectionTimeoutSeconds))
        // Sized for everything a request within the header limits makes libmicrohttpd keep
        // (ServerConfiguration.connectionMemoryBytes); the limits themselves are checked exactly in
        // the first callback, so requests past them get a 431 of our own.
        settings.pointee.connection_memory_limit = configuration.connectionMemoryBytes
        settings.pointee.connection_limit = UInt32(max(1, configuration.maxConnections))
        settings.pointee.per_ip_connection_limit = UInt32(max(0, configuration.maxConnectionsPerAddress))
        settings.pointee.uri_callback = requestStartedCallback
        settings.pointee.uri_cls = Unmanaged.passUnretained(core).toOpaque()
        settings.pointee.completed_callback = requestCompletedCallback
        settings.pointee.log_callback = daemonLogCallback
        let cls = Unmanaged.passUnretained(core).toOpaque()
        settings.pointee.log_cls = cls
        let failure = { (what: String) -> ServerError in
            let reason = String(cString: strerror(errno))
            close(socket)
            Self.release(settings: settings, cStrings: strings)
            return ServerError(
                .startFailed,
                "cannot \(what) the HTTP server on \(configuration.host):\(configuration.port) (\(reason))")
        }
        guard let daemon = cv_mhd_start(settings, accessHandlerCallback, cls) else { throw failure("start") }
        guard let listener = cv_listener_start(socket, daemon) else {
            let reason = errno
            MHD_stop_daemon(daemon)
            errno = reason
            throw failure("start accepting for")
        }
        pointer = daemon
        self.listener = listener
        self.settings = settings
        cStrings = strings
        port = Int(cv_listener_port(socket))
    }

    /// Stops accepting new connections: they are refused from now on (the socket is shut down, and stays open until
    /// ``stop()``).
    func quiesce() {
        cv_listener_quiesce(listener)
    }

    /// Stops accepting (if not yet), stops the daemon (closing every connection), closes the listening socket and
    /// frees the C memory.
    func stop() {
        cv_listener_quiesce(listener)
        MHD_stop_daemon(pointer)
        cv_listener_close(listener)
        Self.release(settings: settings, cStrings: cStrings)
    }

    /// Leaves the daemon running, and its shut listening socket open (the process is exiting with handlers still
    /// suspended).
    func abandon() {}

    private static func release(
        settings: UnsafeMutablePointer<cv_mhd_settings>, cStrings: [UnsafeMutablePointer<CChar>]
    ) {
        for text in cStrings {
            memset(text, 0, strlen(text))  // the private key is among them
            free(text)
        }
        settings.deinitialize(count: 1)
        settings.deallocate()
    }
}
