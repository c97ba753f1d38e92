public import VaultCore

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
    /// The GnuTLS priority string: which protocol versions, key exchanges and cipher suites the
    /// server accepts. Defaults to ``aeadOnlyPriorities``.
    public var priorities: String

    public init(
        certificatePEM: String, privateKeyPEM: Redacted<String>, clientCAPEM: String? = nil,
        priorities: String = TLSConfiguration.aeadOnlyPriorities
    ) {
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
        self.clientCAPEM = clientCAPEM
        self.priorities = priorities
    }

    /// TLS 1.2 and 1.3 only, AEAD suites only (AES-GCM, ChaCha20-Poly1305), forward-secret key
    /// exchange only (ECDHE, DHE), the server's order first (PCI DSS 4.2.1: strong cryptography).
    /// Refused: SSL 3, TLS 1.0 and 1.1, every CBC suite (and with it every HMAC-SHA1/SHA256 record
    /// MAC), static RSA key exchange, RC4, 3DES and CCM. With TLS 1.2 this leaves the
    /// `ECDHE-{ECDSA,RSA}-{AES128,AES256}-GCM` and `-CHACHA20-POLY1305` suites (and their DHE-RSA
    /// twins); TLS 1.3's suites are all AEAD.
    public static let aeadOnlyPriorities =
        "SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:+CHACHA20-POLY1305"
        + ":-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:+DHE-RSA:%SERVER_PRECEDENCE"
}

/// The HTTP server's settings, with the defaults a development daemon uses.
public struct ServerConfiguration: Sendable {
    /// Address to bind: an IPv4 or IPv6 literal, or `localhost`.
    public var host: String
    /// Port to bind; 0 picks a free one (see ``HTTPServer/port``).
    public var port: Int
    /// Largest accepted request body; larger ones get 413 before they are buffered.
    public var maxBodyBytes: Int
    /// Largest accepted request head (request line plus header fields, as received); larger ones
    /// get 431, or 414 when the request line alone is larger. See ``maxHeaderFields`` and
    /// ``connectionMemoryBytes``.
    public var maxHeaderBytes: Int
    /// A connection idle (or stalled mid-request) this long is closed.
    public var connectionTimeoutSeconds: Int
    /// Event-loop threads (``ThreadingMode/eventLoop``).
    public var threads: Int
    public var threadingMode: ThreadingMode
    /// Most connections open at once.
    public var maxConnections: Int
    /// Most connections open at once from one client IP address (MHD_OPTION_PER_IP_CONNECTION_LIMIT):
    /// more are closed as soon as they are accepted, so one address cannot take the whole
    /// ``maxConnections``. 0 for no limit.
    public var maxConnectionsPerAddress: Int
    /// Time from a request's first line to its last body byte. A request whose header is complete
    /// only after it gets 408 and its connection closes; a body still arriving after it is cut off
    /// (a stalled body sooner: the connection's idle timeout shrinks to the time left). Guards
    /// against clients that trickle a request to hold a connection (slowloris).
    public var requestDeadlineSeconds: Int
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
        maxConnectionsPerAddress: Int = 64,
        requestDeadlineSeconds: Int = 30,
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
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.requestDeadlineSeconds = requestDeadlineSeconds
        self.shutdownGracePeriodSeconds = shutdownGracePeriodSeconds
        self.tls = tls
    }

    /// Most header fields and cookie pairs (together) one request may carry: one per 64 bytes of
    /// ``maxHeaderBytes`` (128 at the default 8 KiB; browsers send some 10-20 fields, Apache's default
    /// limit is 100 fields). More get 431.
    public var maxHeaderFields: Int { max(16, maxHeaderBytes / Self.bytesPerHeaderField) }

    /// Room kept for the response's status line and header fields. A handler's response whose head
    /// is larger is replaced by a 500 (libmicrohttpd would otherwise close the connection unanswered).
    public static let responseHeadBytes = 4096

    /// libmicrohttpd's per-connection memory pool (MHD_OPTION_CONNECTION_MEMORY_LIMIT), sized so that
    /// every request within ``maxHeaderBytes`` and ``maxHeaderFields`` is parsed and answered.
    ///
    /// What libmicrohttpd 0.9.75 keeps in the pool while a request is served:
    /// - the request head as received, at most `maxHeaderBytes` (the text stays where it was read);
    /// - a copy of the `Cookie` field, which it splits into cookie records (at most the head again);
    /// - one record of 64 bytes (56 rounded to its 16-byte alignment) per header field and per
    ///   cookie pair, at most `maxHeaderFields`;
    /// - the response head, at most ``responseHeadBytes``, plus one read increment (1 KiB).
    ///
    /// The query string costs nothing beyond its bytes in the head (libmicrohttpd's own parse of it
    /// is skipped, see cv_mhd.c). At the default 8 KiB limit this is 29 KiB (53 KiB with the 512
    /// fields allowed before). libmicrohttpd 0.9.75 zeroes memory twice per request, whatever was
    /// used: the read buffer's unused part when it shrinks it before the answer (half the pool), and
    /// the whole pool when it resets it for the next request on the connection. Measured on `GET
    /// /health` (wrk, 8 connections, busy 2-core machine) the 53 KiB pool cost 9.9 µs of CPU a
    /// request against 8.4 µs with the 11 KiB pool of a 1 KiB limit.
    public var connectionMemoryBytes: Int {
        2 * maxHeaderBytes + Self.headerRecordBytes * maxHeaderFields + Self.responseHeadBytes + 1024
    }

    /// Bytes of head per header field or cookie pair that ``maxHeaderFields`` allows.
    static let bytesPerHeaderField = 64
    /// Pool bytes libmicrohttpd 0.9.75 takes per header field or cookie pair (64-bit build).
    static let headerRecordBytes = 64
}
