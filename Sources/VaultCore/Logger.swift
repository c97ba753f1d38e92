public import Foundation

/// Severity of a log line, ordered from the most to the least verbose.
public enum LogLevel: Int, Sendable, Comparable, CustomStringConvertible {
    case debug, info, notice, warning, error

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String {
        switch self {
        case .debug: "debug"
        case .info: "info"
        case .notice: "notice"
        case .warning: "warning"
        case .error: "error"
        }
    }

    /// Parses a level name as written in configuration (`"info"`, `"warning"`, ...).
    public init?(name: String) {
        switch name.lowercased() {
        case "debug": self = .debug
        case "info": self = .info
        case "notice": self = .notice
        case "warning", "warn": self = .warning
        case "error": self = .error
        default: return nil
        }
    }
}

/// A value that may appear in a log line.
///
/// Only these cases exist, so a log line can hold text, numbers, booleans and ``Redacted`` values,
/// never an arbitrary object whose `description` might print a secret. Sensitive domain types
/// (PANs, CVX, keys, tokens) convert to `.redacted` through ``LogRedactable``.
public enum LogValue: Sendable, Equatable {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    case redacted(String)
}

/// A type whose only loggable form is a masked rendering (a PAN shows as `497010XXXXXX1119`,
/// a key as `[REDACTED]`).
public protocol LogRedactable {
    /// The masked text that stands for the value in logs.
    var redactedLogText: String { get }
}

extension LogValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }

    /// The masked form of a sensitive value.
    public static func masked(_ value: some LogRedactable) -> LogValue { .redacted(value.redactedLogText) }
}

/// Metadata attached to a log line: a flat dictionary of ``LogValue``.
public typealias LogMetadata = [String: LogValue]

/// One log event as handed to a ``LogHandler``.
public struct LogRecord: Sendable {
    public var time: Date
    public var level: LogLevel
    public var message: String
    public var metadata: LogMetadata

    public init(time: Date, level: LogLevel, message: String, metadata: LogMetadata) {
        self.time = time
        self.level = level
        self.message = message
        self.metadata = metadata
    }
}

/// Where log records go (stderr as JSON lines in the daemon, memory in tests).
public protocol LogHandler: Sendable {
    func write(_ record: LogRecord)
}

/// A small logger value: a handler, a minimum level, and metadata carried into every line
/// (for example the request id). Pass it to initialisers; there is no global logger.
public struct Logger: Sendable {
    public var handler: any LogHandler
    public var minimumLevel: LogLevel
    public var metadata: LogMetadata
    public var clock: any WallClock

    public init(
        handler: any LogHandler,
        minimumLevel: LogLevel = .info,
        metadata: LogMetadata = [:],
        clock: any WallClock = SystemClock()
    ) {
        self.handler = handler
        self.minimumLevel = minimumLevel
        self.metadata = metadata
        self.clock = clock
    }

    /// A logger that drops everything.
    public static let disabled = Logger(handler: DiscardLogHandler(), minimumLevel: .error)

    /// Returns a copy of this logger that adds `extra` to every line.
    public func with(_ extra: LogMetadata) -> Logger {
        var copy = self
        copy.metadata.merge(extra) { _, new in new }
        return copy
    }

    public func log(_ level: LogLevel, _ message: String, _ extra: LogMetadata = [:]) {
        guard level >= minimumLevel else { return }
        var all: LogMetadata
        if metadata.isEmpty {
            all = extra
        } else if extra.isEmpty {
            all = metadata
        } else {
            all = metadata.merging(extra) { _, new in new }
        }
        if all["requestId"] == nil, let requestID = LogContext.requestID { all["requestId"] = .string(requestID) }
        handler.write(LogRecord(time: clock.now, level: level, message: message, metadata: all))
    }

    public func debug(_ message: String, _ extra: LogMetadata = [:]) { log(.debug, message, extra) }
    public func info(_ message: String, _ extra: LogMetadata = [:]) { log(.info, message, extra) }
    public func notice(_ message: String, _ extra: LogMetadata = [:]) { log(.notice, message, extra) }
    public func warning(_ message: String, _ extra: LogMetadata = [:]) { log(.warning, message, extra) }
    public func error(_ message: String, _ extra: LogMetadata = [:]) { log(.error, message, extra) }
}

/// A handler that drops every record.
public struct DiscardLogHandler: LogHandler {
    public init() {}
    public func write(_ record: LogRecord) {}
}
