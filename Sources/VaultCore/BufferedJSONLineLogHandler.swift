import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Writes the same JSON lines as ``JSONLineLogHandler``, but gathers them and writes whole batches:
/// when the batch reaches `capacity` bytes, when a line of level `warning` or above arrives, on a
/// timer every `flushInterval`, and on ``flush()``. One `write(2)` per request line costs more than
/// rendering it (several µs on a file), so the daemon's access log uses this. At most one interval
/// of lines is lost if the process is killed outright.
public final class BufferedJSONLineLogHandler: LogHandler, Sendable {
    private let fileDescriptor: Int32
    private let capacity: Int
    private let pending = Locked<[UInt8]>([])
    private let timer: TimerBox

    /// - Parameters:
    ///   - fileDescriptor: where lines go; standard error by default.
    ///   - capacity: batch size that triggers a write.
    ///   - flushInterval: longest time a line waits.
    public init(fileDescriptor: Int32 = 2, capacity: Int = 64 * 1024, flushInterval: Duration = .milliseconds(200)) {
        self.fileDescriptor = fileDescriptor
        self.capacity = capacity
        let source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "cardvault.log-flush"))
        timer = TimerBox(source: source)
        let nanoseconds =
            flushInterval.components.seconds * 1_000_000_000
            + flushInterval.components.attoseconds / 1_000_000_000
        source.schedule(deadline: .now() + .nanoseconds(Int(nanoseconds)), repeating: .nanoseconds(Int(nanoseconds)))
        source.setEventHandler { [weak self] in self?.flush() }
        source.resume()
    }

    deinit {
        timer.source.cancel()
        flush()
    }

    public func write(_ record: LogRecord) {
        var line = JSONLineLogHandler.renderBytes(record)
        line.append(0x0A)
        let urgent = record.level >= .warning
        pending.withLock { buffer in
            buffer.append(contentsOf: line)
            if urgent || buffer.count >= capacity {
                writeAll(buffer)
                buffer.removeAll(keepingCapacity: true)
            }
        }
    }

    /// Writes every gathered line now.
    public func flush() {
        pending.withLock { buffer in
            guard !buffer.isEmpty else { return }
            writeAll(buffer)
            buffer.removeAll(keepingCapacity: true)
        }
    }

    private func writeAll(_ bytes: [UInt8]) {
        JSONLineLogHandler.writeFully(bytes, to: fileDescriptor)
    }

    /// Unchecked Sendable: Dispatch timer sources are thread-safe but not annotated.
    private struct TimerBox: @unchecked Sendable {
        let source: any DispatchSourceTimer
    }
}
