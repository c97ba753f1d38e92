import VaultCore

/// How the server's threads serve connections.
public enum ThreadingMode: Sendable, Equatable {
    /// A pool of `threads` epoll event loops; a request whose handler waits is suspended
    /// (MHD_suspend_connection) and resumed when the handler's task answers, so a waiting handler
    /// holds no thread. The default.
    case eventLoop
    /// One thread per connection; a waiting handler blocks its connection's thread.
    case threadPerConnection
}

/// TLS material, as PEM text.
public struct TLSConfiguration: Sendable {
    public var certificatePEM: String
    public var privateKeyPEM: Redacted<String>
    /// When set, clients must present a certificate that verifies against these CAs (mutual TLS).
    public var clientCAPEM: String?

    public init(certificatePEM: String, privateKeyPEM: Redacted<String>, clientCAPEM: String? = nil) {
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
        self.clientCAPEM = clientCAPEM
    }
}

/// The HTTP server's settings, with the defaults a development daemon uses.
public struct ServerConfiguration: Sendable {
    /// Address to bind: an IPv4 or IPv6 literal, or `localhost`.
    public var host: String
    /// Port to bind; 0 picks a free one (see ``HTTPServer/port``).
    public var port: Int
    /// Largest accepted request body; larger ones get 413 before they are buffered.
    public var maxBodyBytes: Int
    /// Largest accepted request line plus header fields; larger ones get 431.
    public var maxHeaderBytes: Int
    /// A connection idle (or stalled mid-request) this long is closed.
    public var connectionTimeoutSeconds: Int
    /// Event-loop threads (``ThreadingMode/eventLoop``).
    public var threads: Int
    public var threadingMode: ThreadingMode
    /// Most connections open at once.
    public var maxConnections: Int
    /// How long shutdown waits for in-flight requests.
    public var shutdownGracePeriodSeconds: Int
    /// HTTPS when set; plain HTTP otherwise.
    public var tls: TLSConfiguration?

    public init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        maxBodyBytes: Int = 1 << 20,
        maxHeaderBytes: Int = 8 << 10,
        connectionTimeoutSeconds: Int = 30,
        threads: Int = 2,
        threadingMode: ThreadingMode = .eventLoop,
        maxConnections: Int = 1024,
        shutdownGracePeriodSeconds: Int = 10,
        tls: TLSConfiguration? = nil
    ) {
        self.host = host
        self.port = port
        self.maxBodyBytes = maxBodyBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.connectionTimeoutSeconds = connectionTimeoutSeconds
        self.threads = threads
        self.threadingMode = threadingMode
        self.maxConnections = maxConnections
        self.shutdownGracePeriodSeconds = shutdownGracePeriodSeconds
        self.tls = tls
    }
}
