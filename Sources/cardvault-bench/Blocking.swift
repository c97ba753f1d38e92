import Dispatch
import VaultCore

/// Runs async `body` to completion from synchronous bench code and returns its result. The bench's
/// driver is synchronous (one measurement at a time); store and API workloads are async.
func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let outcome = Locked<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let result: Result<T, any Error>
        do { result = .success(try await body()) } catch { result = .failure(error) }
        outcome.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    return try outcome.withLock { $0! }.get()
}

/// Runs `tasks` concurrent loops for `seconds`, each calling `operation(task, iteration)` and
/// timing every call: the sample is the calls completed per second and their latencies.
///
/// The loop itself costs little, since on a small machine its CPU is taken from the code under
/// test: one monotonic clock read per call (a call's end is the next one's start), whole
/// nanoseconds, and latencies converted only at the end.
func measureConcurrently(
    tasks: Int, seconds: Double,
    _ operation: @escaping @Sendable (_ task: Int, _ iteration: Int) async throws -> Void
) throws -> Sample {
    try runBlocking {
        let started = DispatchTime.now().uptimeNanoseconds
        let deadline = started + UInt64(seconds * 1e9)
        let latencies = try await withThrowingTaskGroup(of: [UInt64].self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var mine: [UInt64] = []
                    mine.reserveCapacity(4096)
                    var iteration = 0
                    var begin = DispatchTime.now().uptimeNanoseconds
                    while begin < deadline {
                        try await operation(task, iteration)
                        let end = DispatchTime.now().uptimeNanoseconds
                        mine.append(end - begin)
                        begin = end
                        iteration += 1
                    }
                    return mine
                }
            }
            var all: [UInt64] = []
            for try await part in group { all += part }
            return all
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        return Sample(
            rate: Double(latencies.count) / elapsed, latency: LatencySummary(micros: latencies.map { Double($0) / 1e3 })
        )
    }
}
