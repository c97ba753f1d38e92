import Foundation
import Testing

@testable import VaultCore

#if canImport(Glibc)
import Glibc
#endif

@Suite struct BufferedJSONLineLogHandlerTests {
    /// A pipe whose read end is non-blocking, to see what has been written so far.
    final class Pipe2 {
        let read: Int32
        let write: Int32
        init() {
            var fds: [Int32] = [0, 0]
            _ = pipe(&fds)
            read = fds[0]
            write = fds[1]
            _ = fcntl(read, F_SETFL, fcntl(read, F_GETFL) | O_NONBLOCK)
        }
        deinit {
            close(read)
            close(write)
        }
        func available() -> String {
            var out: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = chunk.withUnsafeMutableBytes { Glibc.read(read, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                out.append(contentsOf: chunk[..<count])
            }
            return String(decoding: out, as: UTF8.self)
        }
    }

    @Test func holdsLinesUntilFlushAndWritesTheSameText() {
        let pipe = Pipe2()
        let handler = BufferedJSONLineLogHandler(fileDescriptor: pipe.write, flushInterval: .seconds(3600))
        let clock = ManualClock()
        let logger = Logger(handler: handler, clock: clock)
        logger.info("one", ["status": 200])
        logger.info("two")
        #expect(pipe.available().isEmpty)
        handler.flush()
        let expected = [
            LogRecord(time: clock.now, level: .info, message: "one", metadata: ["status": 200]),
            LogRecord(time: clock.now, level: .info, message: "two", metadata: [:]),
        ].map { JSONLineLogHandler.render($0) + "\n" }.joined()
        #expect(pipe.available() == expected)
    }

    @Test func warningsAndFullBatchesAreWrittenAtOnce() {
        let pipe = Pipe2()
        let handler = BufferedJSONLineLogHandler(
            fileDescriptor: pipe.write, capacity: 4096, flushInterval: .seconds(3600))
        let logger = Logger(handler: handler)
        logger.info("quiet")
        logger.warning("loud")
        let both = pipe.available()
        #expect(both.contains("\"quiet\"") && both.contains("\"loud\""))
        for index in 0..<100 { logger.info("line \(index)") }
        let batch = pipe.available()
        #expect(batch.contains("line 0"))
        #expect(!batch.contains("line 99"))
    }

    @Test func theTimerFlushes() async throws {
        let pipe = Pipe2()
        let handler = BufferedJSONLineLogHandler(fileDescriptor: pipe.write, flushInterval: .milliseconds(20))
        Logger(handler: handler).info("later")
        var text = ""
        for _ in 0..<100 where !text.contains("later") {
            try await Task.sleep(for: .milliseconds(10))
            text += pipe.available()
        }
        #expect(text.contains("\"later\""))
    }
}
