internal import CSanitizerHooks
import Synchronization

/// A value guarded by a lock: `Synchronization.Mutex` with ThreadSanitizer annotations.
///
/// On Linux the standard library's `Mutex` locks with futex system calls that ThreadSanitizer cannot see,
/// so under `make test-sanitize` every access inside `withLock` looked like a race (a plain two-thread
/// counter in a `Mutex` reproduces it). Each critical section here also tells ThreadSanitizer that it acquires
/// and releases this lock; outside sanitizer builds those calls do nothing. Use it wherever a `Mutex` would do.
public final class Locked<Value>: Sendable {
    private let mutex: Mutex<Value>

    public init(_ initialValue: sending Value) {
        mutex = Mutex(initialValue)
    }

    /// Runs `body` with exclusive access to the value.
    public func withLock<Result, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        let address = Unmanaged.passUnretained(self).toOpaque()
        return try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            cv_sanitizer_acquire(address)
            defer { cv_sanitizer_release(address) }
            return try body(&value)
        }
    }
}
