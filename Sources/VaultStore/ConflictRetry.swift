/// Read-modify-write under optimistic concurrency: the one retry loop of the domain.
///
/// `attempt` reads the records it changes and writes them conditioned on the versions it read (`.version(v)`,
/// or `.absent` for a record it creates). When the store refuses a write with `conflict` (another writer got
/// there first), the whole attempt runs again on fresh reads, up to `attempts` times in all; anything else it
/// throws ends the loop at once. The attempt must do nothing outside the store that it cannot repeat before its
/// last write (log and notify after it).
///
/// - Parameters:
///   - attempts: how many times to run `attempt` before giving up (at least 1).
///   - exhausted: the error for the caller when every attempt met a conflict (a retryable 503 in the API).
///   - attempt: one read-modify-write; its result is returned once it commits.
@inlinable public func retryingOnConflict<Result>(
    attempts: Int, exhausted: @autoclosure () -> any Error, _ attempt: () async throws -> Result
) async throws -> Result {
    for _ in 0..<max(1, attempts) {
        do {
            return try await attempt()
        } catch let error as StoreError where error.code == .conflict {
            continue
        }
    }
    throw exhausted()
}

/// ``retryingOnConflict(attempts:exhausted:_:)`` for an operation that answers `fallback` (a refusal the caller
/// shows as such) instead of an error when every attempt met a conflict.
@inlinable public func retryingOnConflict<Result>(
    attempts: Int, fallback: @autoclosure () -> Result, _ attempt: () async throws -> Result
) async throws -> Result {
    do {
        return try await retryingOnConflict(attempts: attempts, exhausted: AttemptsExhausted(), attempt)
    } catch is AttemptsExhausted {
        return fallback()
    }
}

/// Every attempt met a conflict (internal to this module: an attempt can never throw it itself).
@usableFromInline struct AttemptsExhausted: Error {
    @inlinable init() {}
}
