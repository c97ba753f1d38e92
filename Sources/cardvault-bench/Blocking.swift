import Dispatch
import Synchronization

/// Runs async `body` to completion from synchronous bench code and returns its result. The bench's
/// driver is synchronous (one measurement at a time); store and API workloads are async.
func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let outcome = Mutex<Result<T, any Error>?>(nil)
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
func measureConcurrently(
    tasks: Int, seconds: Double,
    _ operation: @escaping @Sendable (_ task: Int, _ iteration: Int) async throws -> Void
) throws -> Sample {
    try runBlocking {
        let deadline = ContinuousClock.now + .nanoseconds(Int64(seconds * 1e9))
        let started = ContinuousClock.now
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var mine: [Double] = []
                    var iteration = 0
                    while ContinuousClock.now < deadline {
                        let begin = ContinuousClock.now
                        try await operation(task, iteration)
                        mine.append(micros(ContinuousClock.now - begin))
                        iteration += 1
                    }
                    return mine
                }
            }
            var all: [Double] = []
            for try await part in group { all += part }
            return all
        }
        let elapsed = micros(ContinuousClock.now - started) / 1e6
        return Sample(rate: Double(latencies.count) / elapsed, latency: LatencySummary(micros: latencies))
    }
}
