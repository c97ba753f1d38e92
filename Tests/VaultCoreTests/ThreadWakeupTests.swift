import Dispatch
import Foundation
import Testing

@testable import VaultCore

@Suite struct ThreadWakeupTests {
    @Test func aSignalBeforeTheWaitIsKeptAndTakenOnce() {
        let wakeup = ThreadWakeup()
        wakeup.signal()
        wakeup.wait()
        #expect(!wakeup.wait(timeout: .now() + .milliseconds(20)))
    }

    @Test func aWaitWithADeadlineReturnsFalseOnceItPasses() {
        let wakeup = ThreadWakeup()
        let started = DispatchTime.now().uptimeNanoseconds
        #expect(!wakeup.wait(timeout: .now() + .milliseconds(30)))
        #expect(DispatchTime.now().uptimeNanoseconds - started >= 30_000_000)
        #expect(!wakeup.wait(timeout: .now() - .milliseconds(5)))
    }

    @Test func aSignalFromAnotherThreadWakesAWaitingThread() {
        let wakeup = ThreadWakeup()
        let answered = ThreadWakeup()
        let seen = Locked(0)
        let thread = Thread {
            for _ in 0..<100 {
                wakeup.wait()
                seen.withLock { $0 += 1 }
                answered.signal()
            }
        }
        thread.start()
        for round in 1...100 {
            wakeup.signal()
            #expect(answered.wait(timeout: .now() + .seconds(5)))
            #expect(seen.withLock { $0 } == round)
        }
    }
}
