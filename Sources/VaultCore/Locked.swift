internal import CSanitizerHooks
public import Synchronization

/// A value guarded by a lock: `Synchronization.Mutex` with ThreadSanitizer annotations.
///
/// On Linux the standard library's `Mutex` locks with futex system calls that ThreadSanitizer cannot see,
/// so under `make test-sanitize` every access inside `withLock` looked like a race (a plain two-thread
/// counter in a `Mutex` reproduces it). Each critical section here also tells ThreadSanitizer that it acquires
/// and releases this lock; outside sanitizer builds those calls do nothing. Use it wherever a `Mutex` would do.
///
/// `withLock` is inlinable so that each caller gets it specialized for its value type: called generically
/// across modules it looked up `Mutex<Value>`'s metadata on every call (about 440 instructions each, 18 per
/// tokenization POST).
public final class Locked<Value>: Sendable {
    @usableFromInline let mutex: Mutex<Value>

    public init(_ initialValue: sending Value) {
        mutex = Mutex(initialValue)
    }

    /// Runs `body` with exclusive access to the value.
    @inlinable
    public func withLock<Result, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        let address = Unmanaged.passUnretained(self).toOpaque()
        return try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            lockAcquired(address)
            defer { lockReleased(address) }
            return try body(&value)
        }
    }
}

/// Tells ThreadSanitizer that the lock at `address` was acquired (nothing outside sanitizer builds).
@usableFromInline func lockAcquired(_ address: UnsafeMutableRawPointer) { cv_sanitizer_acquire(address) }

/// Tells ThreadSanitizer that the lock at `address` is being released.
@usableFromInline func lockReleased(_ address: UnsafeMutableRawPointer) { cv_sanitizer_release(address) }
