public import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// Wakes a thread of its own (a store's flusher or indexer, a connection thread): a count of pending wake-ups,
/// guarded by a pthread mutex and waited for on a condition variable over the monotonic clock.
///
/// It is for threads that are not the concurrency pool's and must block; async code awaits instead. Each
/// ``signal()`` lets one ``wait()`` return, whether it comes before or after the wait. ThreadSanitizer sees the
/// pthread calls, so the hand-off is visible to it.
public final class ThreadWakeup: @unchecked Sendable {
    // @unchecked: `pending` and the pthread objects are read and written only with `mutex` held.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var pending = 0

    public init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Lets one waiter return: the one waiting now, or the next to wait.
    public func signal() {
        pthread_mutex_lock(mutex)
        pending += 1
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Blocks the calling thread until a wake-up is pending, and takes it.
    public func wait() {
        pthread_mutex_lock(mutex)
        while pending == 0 { pthread_cond_wait(condition, mutex) }
        pending -= 1
        pthread_mutex_unlock(mutex)
    }

    /// Blocks until a wake-up is pending (and takes it) or `deadline` passes.
    ///
    /// - Returns: whether a wake-up was taken (false when the deadline passed first).
    @discardableResult
    public func wait(timeout deadline: DispatchTime) -> Bool {
        let now = DispatchTime.now().uptimeNanoseconds
        let remaining = deadline.uptimeNanoseconds > now ? deadline.uptimeNanoseconds - now : 0
        var until = timespec()
        clock_gettime(CLOCK_MONOTONIC, &until)
        let nanoseconds = UInt64(until.tv_nsec) + remaining % 1_000_000_000
        until.tv_sec += Int(remaining / 1_000_000_000) + Int(nanoseconds / 1_000_000_000)
        until.tv_nsec = Int(nanoseconds % 1_000_000_000)
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while pending == 0 {
            if pthread_cond_timedwait(condition, mutex, &until) == ETIMEDOUT { break }
        }
        guard pending > 0 else { return false }
        pending -= 1
        return true
    }
}
