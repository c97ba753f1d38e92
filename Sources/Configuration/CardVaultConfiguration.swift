public import Foundation
public import HTTPServer
public import VaultCore

/// A configuration value that cannot be used; the message names the field (and the environment
/// variable when the value came from one).
public struct ConfigurationError: CodedError, Equatable {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let unreadableFile = Code("unreadable_file")
        public static let malformedFile = Code("malformed_file")
        public static let unknownField = Code("unknown_field")
        public static let invalidValue = Code("invalid_value")
    }

    public var code: Code
    /// The field's path in the file (`http.maxBodyBytes`), or empty for the file as a whole.
    public var field: String
    public var message: String

    public init(_ code: Code, field: String, message: String) {
        self.code = code
        self.field = field
        self.message = message
    }

    public static func == (lhs: ConfigurationError, rhs: ConfigurationError) -> Bool { lhs.code == rhs.code }
}

/// The daemon's configuration: read once from `config/cardvault.json` (or `--config FILE`), then
/// `CARDVAULT_…` environment variables override single fields. README.md, "Configuration", lists
/// every field.
public struct CardVaultConfiguration: Sendable, Equatable {
    /// HTTP limits and threads.
    public struct HTTP: Sendable, Equatable {
        public var maxBodyBytes: Int
        public var maxHeaderBytes: Int
        public var connectionTimeoutSeconds: Int
        public var threads: Int
        public var shutdownGracePeriodSeconds: Int
        /// Most connections open at once.
        public var maxConnections: Int
        /// Most connections open at once from one IP address; at most half of ``maxConnections``.
        public var maxConnectionsPerAddress: Int
        /// Time from a request's first line to its last body byte (slowloris guard).
        public var requestDeadlineSeconds: Int

        public init(
            maxBodyBytes: Int = 1 << 20,
            maxHeaderBytes: Int = 8 << 10,
            connectionTimeoutSeconds: Int = 30,
            threads: Int = 2,
            shutdownGracePeriodSeconds: Int = 10,
            maxConnections: Int = 1024,
            maxConnectionsPerAddress: Int = 64,
            requestDeadlineSeconds: Int = 30
        ) {
            self.maxBodyBytes = maxBodyBytes
            self.maxHeaderBytes = maxHeaderBytes
            self.connectionTimeoutSeconds = connectionTimeoutSeconds
            self.threads = threads
            self.shutdownGracePeriodSeconds = shutdownGracePeriodSeconds
            self.maxConnections = maxConnections
            self.maxConnectionsPerAddress = maxConnectionsPerAddress
            self.requestDeadlineSeconds = requestDeadlineSeconds
        }
    }

    /// When the current data key is replaced by itself (see docs/operations.md, "Keys").
    public struct Keys: Sendable, Equatable {
        /// AES-GCM seals one data key version makes before a new version takes over (random 96-bit
        /// nonces: NIST SP 800-38D allows 2^32; default 2^30).
        public var rotateAfterSeals: Int
        /// Days after which the current data key version is replaced before its next seal; 0: never.
        public var rotateAfterDays: Int

        public init(rotateAfterSeals: Int = 1 << 30, rotateAfterDays: Int = 90) {
            self.rotateAfterSeals = rotateAfterSeals
            self.rotateAfterDays = rotateAfterDays
        }
    }

    /// Custody of the master key (docs/key-custody.md): where it lives and, for an HSM, how to reach it.
    public struct KeyEncryptionKey: Sendable, Equatable {
        /// `file` (development), `shares` (sealed start, operator shares) or `pkcs11` (an HSM); nil: what the keys
        /// directory's `custody.json` records, else `file`.
        public var provider: String?
        /// The PKCS#11 module (shared library) to load, for `pkcs11`.
        public var module: String?
        /// The label of the token that holds the key.
        public var tokenLabel: String?
        /// The label of the AES-256 key inside the token.
        public var keyLabel: String
        /// A file (mode 0600) that holds the token's user PIN.
        public var pinFile: String?
        /// The environment variable that holds the token's user PIN (when no `pinFile`).
        public var pinEnvironment: String

        public init(
            provider: String? = nil, module: String? = nil, tokenLabel: String? = nil,
            keyLabel: String = "cardvault-master", pinFile: String? = nil,
            pinEnvironment: String = "CARDVAULT_PKCS11_PIN"
        ) {
            self.provider = provider
            self.module = module
            self.tokenLabel = tokenLabel
            self.keyLabel = keyLabel
            self.pinFile = pinFile
            self.pinEnvironment = pinEnvironment
        }
    }

    /// The PostgreSQL backend's settings (used when ``CardVaultConfiguration/databaseURL`` is set).
    public struct Database: Sendable, Equatable {
        /// Connections each daemon keeps open (each serves pipelined reads and grouped commits); the default is
        /// `PostgresStoreOptions.defaultPoolSize`'s.
        public var poolSize: Int
        /// `synchronous_commit` of the daemon's sessions: on, remote_apply, remote_write, local, off.
        public var synchronousCommit: String

        public init(poolSize: Int = 2, synchronousCommit: String = "on") {
            self.poolSize = poolSize
            self.synchronousCommit = synchronousCommit
        }
    }

    /// How long records live and how often the sweeper ends them (docs/operations.md, "Record lifetimes").
    public struct Lifetimes: Sendable, Equatable {
        /// Seconds between two rounds of the record sweeper.
        public var sweepIntervalSeconds: Int
        /// How long a card registration's access key works; a card number tokenized with it and never
        /// completed is deleted then.
        public var accessKeySeconds: Int
        /// How long a shopper has to finish a hosted checkout.
        public var checkoutSessionSeconds: Int

        public init(sweepIntervalSeconds: Int = 60, accessKeySeconds: Int = 1200, checkoutSessionSeconds: Int = 1800) {
            self.sweepIntervalSeconds = sweepIntervalSeconds
            self.accessKeySeconds = accessKeySeconds
            self.checkoutSessionSeconds = checkoutSessionSeconds
        }
    }

    /// HTTPS: a certificate and key turn it on; a client CA file requires client certificates.
    public struct TLS: Sendable, Equatable {
        public var certificateFile: String?
        public var keyFile: String?
        public var clientCAFile: String?

        public init(certificateFile: String? = nil, keyFile: String? = nil, clientCAFile: String? = nil) {
            self.certificateFile = certificateFile
            self.keyFile = keyFile
            self.clientCAFile = clientCAFile
        }

        public var isEnabled: Bool { certificateFile != nil }
    }

    /// Address to bind (IPv4/IPv6 literal or `localhost`).
    public var listenHost: String
    /// Port to bind; 0 picks a free one.
    public var listenPort: Int
    /// Base URL of links handed to browsers (hosted pages, 3DS returns).
    public var publicURL: String
    /// Where the record store keeps its files.
    public var dataDirectory: String
    /// Where key files live.
    public var keysDirectory: String
    public var logLevel: LogLevel
    /// The sandbox issuer's table (test cards, frictionless maximum, challenge code); built-in when nil.
    public var sandboxFile: String?
    /// The risk engine's thresholds; built-in defaults when nil.
    public var riskFile: String?
    /// Browser origins allowed to post card data to the tokenization endpoint (`*` for any).
    public var checkoutOrigins: [String]
    /// Tokenization attempts one client IP address may make per minute (a burst of this many, refilled
    /// continuously); more are answered 429.
    public var tokenizationsPerMinutePerAddress: Int
    /// Hosted checkout page requests (`/srci...`) one address may make per minute; more get 429.
    public var pageViewsPerMinutePerAddress: Int
    /// Sandbox ACS page requests (`/acs/...`) one address may make per minute; more get 429.
    public var acsRequestsPerMinutePerAddress: Int
    /// Failed `POST /v2.01/oauth/token` authentications one address may make per minute; then every
    /// token request from it gets 429 until its bucket refills.
    public var tokenFailuresPerMinutePerAddress: Int
    /// Addresses each rate limiter tracks at once (IPv4 addresses, IPv6 /64 prefixes); the least
    /// recently seen is forgotten past it.
    public var rateLimitTrackedAddresses: Int
    public var http: HTTP
    public var tls: TLS
    /// When set, `GET /metrics` answers only requests with `Authorization: Bearer <token>` (401
    /// otherwise). nil leaves it open, for a daemon bound to loopback or behind a private network.
    public var metricsToken: Redacted<String>?
    /// Automatic data key rotation.
    public var keys: Keys
    /// Custody of the master key.
    public var kek = KeyEncryptionKey()
    /// A libpq URI (multi-host allowed): when set, records and data keys live in PostgreSQL and the data
    /// directory holds only the admin socket. nil: the encrypted file store in the data directory.
    public var databaseURL: Redacted<String>?
    public var database: Database
    /// Record lifetimes and the sweeper.
    public var lifetimes: Lifetimes
    /// Detokenize-and-forward destinations and limits.
    public var forward: Forward
    /// Hook deliveries: retry interval, private destinations, concurrency.
    public var hooks: Hooks

    public init(
        listenHost: String = "127.0.0.1",
        listenPort: Int = 8080,
        publicURL: String = "http://127.0.0.1:8080",
        dataDirectory: String = "data",
        keysDirectory: String = "keys",
        logLevel: LogLevel = .info,
        sandboxFile: String? = nil,
        riskFile: String? = nil,
        checkoutOrigins: [String] = [],
        tokenizationsPerMinutePerAddress: Int = 60,
        pageViewsPerMinutePerAddress: Int = 300,
        acsRequestsPerMinutePerAddress: Int = 120,
        tokenFailuresPerMinutePerAddress: Int = 30,
        rateLimitTrackedAddresses: Int = 65_536,
        http: HTTP = HTTP(),
        tls: TLS = TLS(),
        metricsToken: Redacted<String>? = nil,
        keys: Keys = Keys(),
        databaseURL: Redacted<String>? = nil,
        database: Database = Database(),
        lifetimes: Lifetimes = Lifetimes(),
        forward: Forward = Forward(),
        hooks: Hooks = Hooks()
    ) {
        self.listenHost = listenHost
        self.listenPort = listenPort
        self.publicURL = publicURL
        self.dataDirectory = dataDirectory
        self.keysDirectory = keysDirectory
        self.logLevel = logLevel
        self.sandboxFile = sandboxFile
        self.riskFile = riskFile
        self.checkoutOrigins = checkoutOrigins
        self.tokenizationsPerMinutePerAddress = tokenizationsPerMinutePerAddress
        self.pageViewsPerMinutePerAddress = pageViewsPerMinutePerAddress
        self.acsRequestsPerMinutePerAddress = acsRequestsPerMinutePerAddress
        self.tokenFailuresPerMinutePerAddress = tokenFailuresPerMinutePerAddress
        self.rateLimitTrackedAddresses = rateLimitTrackedAddresses
        self.http = http
        self.tls = tls
        self.metricsToken = metricsToken
        self.keys = keys
        self.databaseURL = databaseURL
        self.database = database
        self.lifetimes = lifetimes
        self.forward = forward
        self.hooks = hooks
    }

    /// `host:port` (IPv6 hosts in brackets).
    public var listen: String {
        (listenHost.contains(":") ? "[" + listenHost + "]" : listenHost) + ":" + String(listenPort)
    }

    // MARK: - Loading

    /// Reads `file` (if given), then applies `CARDVAULT_…` variables from `environment`, then checks
    /// the combination.
    ///
    /// - Throws: ``ConfigurationError`` naming the first bad field.
    public static func load(
        file: String?,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigurationError) -> CardVaultConfiguration {
        var configuration = CardVaultConfiguration()
        if let file {
            try configuration.apply(fileAt: file)
        }
        try configuration.apply(environment: environment)
        try configuration.validate()
        return configuration
    }

    /// Applies the fields present in the JSON file at `path`.
    public mutating func apply(fileAt path: String) throws(ConfigurationError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(.unreadableFile, field: "", message: "cannot read configuration file \(path)")
        }
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw ConfigurationError(.malformedFile, field: "", message: "configuration file \(path) is not valid JSON")
        }
        guard let object = parsed as? [String: Any] else {
            throw ConfigurationError(
                .malformedFile, field: "", message: "configuration file \(path) must hold a JSON object")
        }
        try apply(object: object, prefix: "")
    }

    private mutating func apply(object: [String: Any], prefix: String) throws(ConfigurationError) {
        for key in object.keys.sorted() {
            let path = prefix + key
            let value = object[key]!
            if let nested = value as? [String: Any], ConfigurationField.sections.contains(path) {
                try apply(object: nested, prefix: path + ".")
                continue
            }
            guard let field = ConfigurationField.all.first(where: { $0.path == path }) else {
                throw ConfigurationError(.unknownField, field: path, message: "\(path): unknown configuration field")
            }
            try field.apply(json: value, to: &self)
        }
    }

    /// Applies every `CARDVAULT_…` variable present in `environment`.
    public mutating func apply(environment: [String: String]) throws(ConfigurationError) {
        for field in ConfigurationField.all {
            if let text = environment[field.environmentName] {
                try field.apply(environment: text, to: &self)
            }
        }
    }

    /// Checks the fields together.
    ///
    /// - Throws: ``ConfigurationError`` naming the field at fault.
    public func validate() throws(ConfigurationError) {
        if tls.keyFile != nil && tls.certificateFile == nil {
            throw ConfigurationError(
                .invalidValue,
                field: "tls.certificateFile",
                message: "tls.certificateFile: required when tls.keyFile is set"
            )
        }
        if tls.certificateFile != nil && tls.keyFile == nil {
            throw ConfigurationError(
                .invalidValue,
                field: "tls.keyFile",
                message: "tls.keyFile: required when tls.certificateFile is set"
            )
        }
        if http.maxConnectionsPerAddress > http.maxConnections / 2 {
            throw ConfigurationError(
                .invalidValue,
                field: "http.maxConnectionsPerAddress",
                message: "http.maxConnectionsPerAddress: must be at most half of http.maxConnections "
                    + "(\(http.maxConnections / 2)), so that one address cannot take every connection"
            )
        }
        if tls.clientCAFile != nil && !tls.isEnabled {
            throw ConfigurationError(
                .invalidValue,
                field: "tls.clientCAFile",
                message: "tls.clientCAFile: needs tls.certificateFile and tls.keyFile (mutual TLS runs over HTTPS)"
            )
        }
    }

    /// The HTTP server's settings, with the TLS files read.
    ///
    /// - Throws: ``ConfigurationError`` naming a TLS file that cannot be read.
    public func serverConfiguration() throws(ConfigurationError) -> ServerConfiguration {
        var tlsConfiguration: TLSConfiguration?
        if let certificateFile = tls.certificateFile, let keyFile = tls.keyFile {
            let certificate = try Self.readPEM(certificateFile, field: "tls.certificateFile")
            let key = try Self.readPEM(keyFile, field: "tls.keyFile")
            let clientCA = try tls.clientCAFile.map { (file) throws(ConfigurationError) in
                try Self.readPEM(file, field: "tls.clientCAFile")
            }
            tlsConfiguration = TLSConfiguration(
                certificatePEM: certificate,
                privateKeyPEM: Redacted(key),
                clientCAPEM: clientCA
            )
        }
        return ServerConfiguration(
            host: listenHost,
            port: listenPort,
            maxBodyBytes: http.maxBodyBytes,
            maxHeaderBytes: http.maxHeaderBytes,
            connectionTimeoutSeconds: http.connectionTimeoutSeconds,
            threads: http.threads,
            maxConnections: http.maxConnections,
            maxConnectionsPerAddress: http.maxConnectionsPerAddress,
            requestDeadlineSeconds: http.requestDeadlineSeconds,
            shutdownGracePeriodSeconds: http.shutdownGracePeriodSeconds,
            tls: tlsConfiguration
        )
    }

    private static func readPEM(_ path: String, field: String) throws(ConfigurationError) -> String {
        guard let data = FileManager.default.contents(atPath: path),
            let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN ")
        else {
            throw ConfigurationError(
                .invalidValue, field: field, message: "\(field): cannot read a PEM file at \(path)")
        }
        return text
    }
}
