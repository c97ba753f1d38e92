/// Keeps records in memory, for tests that assert what was (and was not) logged.
public final class MemoryLogHandler: LogHandler {
    private let records = Locked<[LogRecord]>([])

    public init() {}

    public func write(_ record: LogRecord) {
        records.withLock { $0.append(record) }
    }

    /// Everything written so far.
    public var all: [LogRecord] { records.withLock { $0 } }

    /// Every record rendered as the JSON line the daemon would write.
    public var renderedLines: [String] { all.map(JSONLineLogHandler.render) }
}
