import Foundation
import VaultCore

/// One configuration field: where it sits in the file, its environment variable, how to parse and
/// check it, and where it goes.
struct ConfigurationField: Sendable {
    enum Kind: Sendable {
        case listen
        case url
        case path
        case optionalPath
        case logLevel
        case integer(ClosedRange<Int>)
        /// Comma-separated origins (`https://shop.example`) or `*`; an array in the file.
        case origins
        /// A bearer token: 16–256 visible ASCII characters, or empty/null for none.
        case optionalToken
        /// A libpq connection URI (`postgresql://…`) or key=value string, or empty/null for none.
        case optionalDatabaseURL
        /// One of a fixed set of words.
        case choice([String])
        /// Comma-separated items (an array in the file), each checked by `check` (nil: fine, else the problem).
        case list(example: String, check: @Sendable (String) -> String?)
        /// `true`/`false` (a JSON boolean in the file; `true`, `false`, `1` or `0` in the environment).
        case boolean
        /// A name (a PKCS#11 label, an environment variable): 1 to 256 characters, none of them control characters;
        /// optional ones take empty/null for none.
        case label(optional: Bool)
    }

    /// Parsed values.
    enum Value {
        case text(String)
        case none
        case integer(Int)
        case level(LogLevel)
        case address(host: String, port: Int)
        case list([String])
    }

    let path: String
    let environmentName: String
    let kind: Kind
    let store: @Sendable (inout CardVaultConfiguration, Value) -> Void

    /// Objects in the file that hold fields.
    static let sections: Set<String> = ["http", "tls", "keys", "kek", "database", "lifetimes", "forward", "hooks"]

    /// Every field: the daemon's own, then the forward ones (CardVaultConfiguration+Forward.swift) and the hooks'
    /// (CardVaultConfiguration+Hooks.swift).
    static let all: [ConfigurationField] = baseFields + forwardFields + hookFields

    static let baseFields: [ConfigurationField] = [
        ConfigurationField(path: "listen", environmentName: "CARDVAULT_LISTEN", kind: .listen) {
            if case .address(let host, let port) = $1 {
                $0.listenHost = host
                $0.listenPort = port
            }
        },
        ConfigurationField(path: "publicURL", environmentName: "CARDVAULT_PUBLIC_URL", kind: .url) {
            if case .text(let text) = $1 { $0.publicURL = text }
        },
        ConfigurationField(path: "dataDir", environmentName: "CARDVAULT_DATA_DIR", kind: .path) {
            if case .text(let text) = $1 { $0.dataDirectory = text }
        },
        ConfigurationField(path: "keysDir", environmentName: "CARDVAULT_KEYS_DIR", kind: .path) {
            if case .text(let text) = $1 { $0.keysDirectory = text }
        },
        ConfigurationField(path: "logLevel", environmentName: "CARDVAULT_LOG_LEVEL", kind: .logLevel) {
            if case .level(let level) = $1 { $0.logLevel = level }
        },
        ConfigurationField(path: "sandboxFile", environmentName: "CARDVAULT_SANDBOX_FILE", kind: .optionalPath) {
            config, value in config.sandboxFile = Self.optionalText(value)
        },
        ConfigurationField(path: "riskFile", environmentName: "CARDVAULT_RISK_FILE", kind: .optionalPath) {
            config, value in config.riskFile = Self.optionalText(value)
        },
        ConfigurationField(path: "checkoutOrigins", environmentName: "CARDVAULT_CHECKOUT_ORIGINS", kind: .origins) {
            if case .list(let origins) = $1 { $0.checkoutOrigins = origins }
        },
        ConfigurationField(
            path: "tokenizationsPerMinutePerAddress",
            environmentName: "CARDVAULT_TOKENIZATIONS_PER_MINUTE_PER_ADDRESS",
            kind: .integer(1...100_000_000)
        ) { if case .integer(let value) = $1 { $0.tokenizationsPerMinutePerAddress = value } },
        ConfigurationField(
            path: "pageViewsPerMinutePerAddress",
            environmentName: "CARDVAULT_PAGE_VIEWS_PER_MINUTE_PER_ADDRESS",
            kind: .integer(1...100_000_000)
        ) { if case .integer(let value) = $1 { $0.pageViewsPerMinutePerAddress = value } },
        ConfigurationField(
            path: "acsRequestsPerMinutePerAddress",
            environmentName: "CARDVAULT_ACS_REQUESTS_PER_MINUTE_PER_ADDRESS",
            kind: .integer(1...100_000_000)
        ) { if case .integer(let value) = $1 { $0.acsRequestsPerMinutePerAddress = value } },
        ConfigurationField(
            path: "tokenFailuresPerMinutePerAddress",
            environmentName: "CARDVAULT_TOKEN_FAILURES_PER_MINUTE_PER_ADDRESS",
            kind: .integer(1...100_000_000)
        ) { if case .integer(let value) = $1 { $0.tokenFailuresPerMinutePerAddress = value } },
        ConfigurationField(
            path: "rateLimitTrackedAddresses",
            environmentName: "CARDVAULT_RATE_LIMIT_TRACKED_ADDRESSES",
            kind: .integer(1024...(1 << 24))
        ) { if case .integer(let value) = $1 { $0.rateLimitTrackedAddresses = value } },
        ConfigurationField(path: "metricsToken", environmentName: "CARDVAULT_METRICS_TOKEN", kind: .optionalToken) {
            config, value in config.metricsToken = Self.optionalText(value).map { Redacted($0) }
        },
        ConfigurationField(
            path: "http.maxBodyBytes",
            environmentName: "CARDVAULT_HTTP_MAX_BODY_BYTES",
            kind: .integer(1...(1 << 30))
        ) { if case .integer(let value) = $1 { $0.http.maxBodyBytes = value } },
        ConfigurationField(
            path: "http.maxHeaderBytes",
            environmentName: "CARDVAULT_HTTP_MAX_HEADER_BYTES",
            kind: .integer(1024...(1 << 20))
        ) { if case .integer(let value) = $1 { $0.http.maxHeaderBytes = value } },
        ConfigurationField(
            path: "http.connectionTimeoutSeconds",
            environmentName: "CARDVAULT_HTTP_CONNECTION_TIMEOUT_SECONDS",
            kind: .integer(1...3600)
        ) { if case .integer(let value) = $1 { $0.http.connectionTimeoutSeconds = value } },
        ConfigurationField(path: "http.threads", environmentName: "CARDVAULT_HTTP_THREADS", kind: .integer(1...256)) {
            if case .integer(let value) = $1 { $0.http.threads = value }
        },
        ConfigurationField(
            path: "http.shutdownGracePeriodSeconds",
            environmentName: "CARDVAULT_HTTP_SHUTDOWN_GRACE_PERIOD_SECONDS",
            kind: .integer(0...3600)
        ) { if case .integer(let value) = $1 { $0.http.shutdownGracePeriodSeconds = value } },
        ConfigurationField(
            path: "http.maxConnections",
            environmentName: "CARDVAULT_HTTP_MAX_CONNECTIONS",
            kind: .integer(2...65_536)
        ) { if case .integer(let value) = $1 { $0.http.maxConnections = value } },
        ConfigurationField(
            path: "http.maxConnectionsPerAddress",
            environmentName: "CARDVAULT_HTTP_MAX_CONNECTIONS_PER_ADDRESS",
            kind: .integer(1...32_768)
        ) { if case .integer(let value) = $1 { $0.http.maxConnectionsPerAddress = value } },
        ConfigurationField(
            path: "http.requestDeadlineSeconds",
            environmentName: "CARDVAULT_HTTP_REQUEST_DEADLINE_SECONDS",
            kind: .integer(1...3600)
        ) { if case .integer(let value) = $1 { $0.http.requestDeadlineSeconds = value } },
        ConfigurationField(
            path: "tls.certificateFile",
            environmentName: "CARDVAULT_TLS_CERTIFICATE_FILE",
            kind: .optionalPath
        ) { config, value in config.tls.certificateFile = Self.optionalText(value) },
        ConfigurationField(path: "tls.keyFile", environmentName: "CARDVAULT_TLS_KEY_FILE", kind: .optionalPath) {
            config, value in config.tls.keyFile = Self.optionalText(value)
        },
        ConfigurationField(
            path: "tls.clientCAFile", environmentName: "CARDVAULT_TLS_CLIENT_CA_FILE", kind: .optionalPath
        ) {
            config, value in config.tls.clientCAFile = Self.optionalText(value)
        },
        ConfigurationField(
            path: "keys.rotateAfterSeals",
            environmentName: "CARDVAULT_KEYS_ROTATE_AFTER_SEALS",
            kind: .integer(1...(1 << 32))
        ) { if case .integer(let value) = $1 { $0.keys.rotateAfterSeals = value } },
        ConfigurationField(
            path: "keys.rotateAfterDays",
            environmentName: "CARDVAULT_KEYS_ROTATE_AFTER_DAYS",
            kind: .integer(0...36_500)
        ) { if case .integer(let value) = $1 { $0.keys.rotateAfterDays = value } },
        ConfigurationField(
            path: "kek.provider", environmentName: "CARDVAULT_KEK_PROVIDER",
            kind: .choice(["file", "shares", "pkcs11"])
        ) { if case .text(let value) = $1 { $0.kek.provider = value } },
        ConfigurationField(path: "kek.module", environmentName: "CARDVAULT_KEK_MODULE", kind: .optionalPath) {
            config, value in config.kek.module = Self.optionalText(value)
        },
        ConfigurationField(
            path: "kek.tokenLabel", environmentName: "CARDVAULT_KEK_TOKEN_LABEL", kind: .label(optional: true)
        ) {
            config, value in config.kek.tokenLabel = Self.optionalText(value)
        },
        ConfigurationField(
            path: "kek.keyLabel", environmentName: "CARDVAULT_KEK_KEY_LABEL", kind: .label(optional: false)
        ) {
            if case .text(let text) = $1 { $0.kek.keyLabel = text }
        },
        ConfigurationField(path: "kek.pinFile", environmentName: "CARDVAULT_KEK_PIN_FILE", kind: .optionalPath) {
            config, value in config.kek.pinFile = Self.optionalText(value)
        },
        ConfigurationField(
            path: "kek.pinEnvironment", environmentName: "CARDVAULT_KEK_PIN_ENVIRONMENT", kind: .label(optional: false)
        ) { if case .text(let text) = $1 { $0.kek.pinEnvironment = text } },
        ConfigurationField(path: "databaseURL", environmentName: "CARDVAULT_DATABASE_URL", kind: .optionalDatabaseURL) {
            config, value in config.databaseURL = Self.optionalText(value).map { Redacted($0) }
        },
        ConfigurationField(
            path: "database.poolSize", environmentName: "CARDVAULT_DATABASE_POOL_SIZE", kind: .integer(1...256)
        ) { if case .integer(let value) = $1 { $0.database.poolSize = value } },
        ConfigurationField(
            path: "database.synchronousCommit", environmentName: "CARDVAULT_DATABASE_SYNCHRONOUS_COMMIT",
            kind: .choice(["on", "remote_apply", "remote_write", "local", "off"])
        ) { if case .text(let value) = $1 { $0.database.synchronousCommit = value } },
        ConfigurationField(
            path: "lifetimes.sweepIntervalSeconds",
            environmentName: "CARDVAULT_LIFETIMES_SWEEP_INTERVAL_SECONDS",
            kind: .integer(1...86_400)
        ) { if case .integer(let value) = $1 { $0.lifetimes.sweepIntervalSeconds = value } },
        ConfigurationField(
            path: "lifetimes.accessKeySeconds",
            environmentName: "CARDVAULT_LIFETIMES_ACCESS_KEY_SECONDS",
            kind: .integer(1...86_400)
        ) { if case .integer(let value) = $1 { $0.lifetimes.accessKeySeconds = value } },
        ConfigurationField(
            path: "lifetimes.checkoutSessionSeconds",
            environmentName: "CARDVAULT_LIFETIMES_CHECKOUT_SESSION_SECONDS",
            kind: .integer(1...86_400)
        ) { if case .integer(let value) = $1 { $0.lifetimes.checkoutSessionSeconds = value } },
    ]

    private static func optionalText(_ value: Value) -> String? {
        if case .text(let text) = value { return text }
        return nil
    }

    /// Applies a value from the JSON file.
    func apply(json: Any, to configuration: inout CardVaultConfiguration) throws(ConfigurationError) {
        let value: Value
        switch kind {
        case .integer(let range):
            // JSON booleans arrive as NSNumber too; their Objective-C type is "c".
            guard let number = json as? NSNumber, String(cString: number.objCType) != "c",
                let integer = Int(exactly: number.doubleValue)
            else { throw invalid("must be an integer from \(range.lowerBound) to \(range.upperBound)") }
            value = try parse(integer: integer, range: range)
        case .origins:
            guard let items = json as? [Any], items.allSatisfy({ $0 is String }) else {
                throw invalid("must be an array of origins such as \"https://shop.example\"")
            }
            value = try parse((items as! [String]).joined(separator: ","))
        case .list(let example, _):
            guard let items = json as? [Any], items.allSatisfy({ $0 is String }) else {
                throw invalid("must be an array of strings such as \"\(example)\"")
            }
            value = try parse((items as! [String]).joined(separator: ","))
        case .boolean:
            guard let number = json as? NSNumber, String(cString: number.objCType) == "c" else {
                throw invalid("must be true or false")
            }
            value = .integer(number.boolValue ? 1 : 0)
        case .optionalPath, .optionalToken, .optionalDatabaseURL, .label(optional: true):
            if json is NSNull {
                value = .none
            } else {
                guard let text = json as? String else {
                    throw invalid(kind.isPath ? "must be a file path or null" : "must be a string or null")
                }
                value = try parse(text)
            }
        default:
            guard let text = json as? String else { throw invalid("must be a string") }
            value = try parse(text)
        }
        store(&configuration, value)
    }

    /// Applies a value from the environment (`environmentName`).
    func apply(environment text: String, to configuration: inout CardVaultConfiguration) throws(ConfigurationError) {
        do throws(ConfigurationError) {
            let value: Value
            if case .integer(let range) = kind {
                guard let integer = Int(text.trimmingCharacters(in: .whitespaces)) else {
                    throw invalid("must be an integer from \(range.lowerBound) to \(range.upperBound)")
                }
                value = try parse(integer: integer, range: range)
            } else {
                value = try parse(text)
            }
            store(&configuration, value)
        } catch {
            throw ConfigurationError(
                error.code,
                field: path,
                message: environmentName + " (" + error.message + ")"
            )
        }
    }

    private func parse(integer: Int, range: ClosedRange<Int>) throws(ConfigurationError) -> Value {
        guard range.contains(integer) else {
            throw invalid("must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return .integer(integer)
    }

    private func parse(_ text: String) throws(ConfigurationError) -> Value {
        switch kind {
        case .listen:
            guard let (host, port) = Self.splitHostPort(text) else {
                throw invalid("must be host:port, for example 127.0.0.1:8080 or [::1]:8080")
            }
            return .address(host: host, port: port)
        case .url:
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
                scheme == "http" || scheme == "https",
                let host = url.host, !host.isEmpty, url.query == nil, url.fragment == nil
            else { throw invalid("must be an absolute http:// or https:// URL without query or fragment") }
            return .text(text.hasSuffix("/") ? String(text.dropLast()) : text)
        case .path:
            guard !text.isEmpty else { throw invalid("must be a directory path") }
            return .text(text)
        case .optionalPath:
            return text.isEmpty ? .none : .text(text)
        case .label(let optional):
            if text.isEmpty && optional { return .none }
            guard (1...256).contains(text.utf8.count),
                !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else {
                throw invalid(
                    "must be 1 to 256 characters without control characters" + (optional ? ", or empty for none" : ""))
            }
            return .text(text)
        case .optionalToken:
            if text.isEmpty { return .none }
            // The message never shows the value: it is a secret.
            guard (16...256).contains(text.utf8.count), text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw invalid("must be 16 to 256 visible ASCII characters (no spaces), or empty for none")
            }
            return .text(text)
        case .logLevel:
            guard let level = LogLevel(name: text) else {
                throw invalid("must be one of debug, info, notice, warning, error")
            }
            return .level(level)
        case .integer(let range):
            throw invalid("must be an integer from \(range.lowerBound) to \(range.upperBound)")
        case .optionalDatabaseURL:
            if text.isEmpty { return .none }
            // The message never shows the value: it may hold a password.
            let lower = text.lowercased()
            guard lower.hasPrefix("postgresql://") || lower.hasPrefix("postgres://") || text.contains("="),
                !text.contains("\n"), text.utf8.count <= 4096
            else {
                throw invalid(
                    "must be a libpq URI such as postgresql://user@host1,host2/cardvault?target_session_attrs=read-write"
                )
            }
            return .text(text)
        case .boolean:
            switch text.trimmingCharacters(in: .whitespaces).lowercased() {
            case "true", "1": return .integer(1)
            case "false", "0": return .integer(0)
            default: throw invalid("must be true or false")
            }
        case .choice(let words):
            guard words.contains(text) else { throw invalid("must be one of " + words.joined(separator: ", ")) }
            return .text(text)
        case .origins:
            let origins = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                !$0.isEmpty
            }
            for origin in origins where origin != "*" {
                guard let url = URL(string: origin), let scheme = url.scheme?.lowercased(),
                    scheme == "http" || scheme == "https", url.host != nil, url.path.isEmpty, url.query == nil
                else { throw invalid("must list origins like https://shop.example (scheme, host, optional port) or *") }
            }
            return .list(origins)
        case .list(_, let check):
            let items = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                !$0.isEmpty
            }
            for item in items {
                if let problem = check(item) { throw invalid(problem) }
            }
            return .list(items)
        }
    }

    /// Splits `host:port` or `[v6]:port`.
    static func splitHostPort(_ text: String) -> (String, Int)? {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                return nil
            }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            if host.contains(":") { return nil }
        }
        guard !host.isEmpty, !host.contains(" "), let port = Int(portText), (0...65535).contains(port) else {
            return nil
        }
        return (String(host), port)
    }

    private func invalid(_ reason: String) -> ConfigurationError {
        ConfigurationError(.invalidValue, field: path, message: path + ": " + reason)
    }
}

extension ConfigurationField.Kind {
    var isPath: Bool {
        if case .optionalPath = self { return true }
        return false
    }

    var isToken: Bool {
        if case .optionalToken = self { return true }
        return false
    }
}
