import VaultCore

/// Why a phase of the daemon (sealed, or serving) ends.
public enum PhaseEnd: Sendable, Equatable {
    /// SIGTERM or SIGINT: the process stops.
    case signal(Int32)
    /// The sealed phase got its master key.
    case unsealed
    /// An operator sealed the serving daemon (`cardvault operator seal`): back to the sealed phase.
    case sealRequested
}

/// The one place a phase learns that it must end. A signal is kept for every later phase (the process stops);
/// an unseal or a seal request ends only the phase that waits for it (``next()`` consumes it).
public final class PhaseSwitch: Sendable {
    private struct State {
        var signal: Int32?
        var pending: PhaseEnd?
        var waiter: CheckedContinuation<PhaseEnd?, Never>?
    }

    private let state = Locked(State())

    public init() {}

    /// Ends the current phase (or the next one, when none waits yet).
    public func fire(_ end: PhaseEnd) {
        let waiter = state.withLock { state -> CheckedContinuation<PhaseEnd?, Never>? in
            if case .signal(let number) = end, state.signal == nil { state.signal = number }
            guard let waiter = state.waiter else {
                if state.pending == nil { state.pending = end }
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: end)
    }

    /// The signal that stops the process, if one arrived.
    public var signal: Int32? { state.withLock { $0.signal } }

    /// Waits for the end of the current phase; nil when the waiting task is cancelled.
    public func next() async -> PhaseEnd? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<PhaseEnd?, Never>) in
                let ready = state.withLock { state -> PhaseEnd?? in
                    if let signal = state.signal { return .some(.signal(signal)) }
                    if let pending = state.pending {
                        state.pending = nil
                        return .some(pending)
                    }
                    if Task.isCancelled { return .some(nil) }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<PhaseEnd?, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    /// The phase's end as the lifecycle's stop value: the signal number, 0 for an unseal or a seal request.
    public func nextStop() async -> Int32? {
        switch await next() {
        case .signal(let number): number
        case .unsealed, .sealRequested: 0
        case nil: nil
        }
    }
}
