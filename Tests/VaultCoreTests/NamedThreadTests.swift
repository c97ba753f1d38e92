import Foundation
import Testing
import VaultCore

@Suite struct NamedThreadTests {
    /// The name the kernel holds for the calling thread (what `top -H` and perf show), read from /proc.
    private static func kernelName() -> String {
        let text = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        return text.trimmingCharacters(in: .newlines)
    }

    private static func nameSeen(running name: String) -> String {
        let seen = Locked("")
        let done = ThreadWakeup()
        Thread.named(name) {
            seen.withLock { $0 = kernelName() }
            done.signal()
        }.start()
        #expect(done.wait(timeout: .now() + .seconds(5)))
        return seen.withLock { $0 }
    }

    @Test func theKernelShowsTheThreadsName() {
        #expect(Self.nameSeen(running: "cv-flusher") == "cv-flusher")
        #expect(Self.nameSeen(running: "cv-pg-store-10") == "cv-pg-store-10")
    }

    @Test func aLongNameIsCutToWhatTheKernelKeeps() {
        #expect(Self.nameSeen(running: "cardvault-store-flusher") == "cardvault-store")
        // 14 bytes, then a 2-byte letter that would end past the 15th: the cut falls before it, not inside it.
        #expect(Self.nameSeen(running: "cv-pg-store-12éa") == "cv-pg-store-12")
        #expect(Thread.nameLimit == 15)
    }
}
