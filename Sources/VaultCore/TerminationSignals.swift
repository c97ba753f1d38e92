import Dispatch

#if canImport(Glibc)
public import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Catches termination signals (SIGTERM, SIGINT) for the application, which turns the first one into a
/// ``ServiceGroup/shutdown()``. Servers and jobs never handle signals themselves.
///
/// While it exists the signals' default action is off (they are ignored and delivered to Dispatch signal
/// sources). ``catching(_:)`` returns only once every source is registered: libdispatch installs its handler
/// asynchronously after `resume()`, and a signal sent in between would be lost (the daemon would then never
/// stop), so the daemon announces that it serves only after this returns.
public final class TerminationSignals: Sendable {
    private struct State {
        var received: Int32?
        var waiter: CheckedContinuation<Int32?, Never>?
    }

    private let state = Locked(State())
    private let sources = Locked<[SourceBox]>([])
    private let numbers: [Int32]

    private init(numbers: [Int32]) { self.numbers = numbers }

    /// Starts catching `signals` (by default SIGTERM and SIGINT); returns once every one is caught.
    public static func catching(_ signals: [Int32] = [SIGTERM, SIGINT]) async -> TerminationSignals {
        let catcher = TerminationSignals(numbers: signals)
        let queue = DispatchQueue(label: "cardvault.signals")
        for number in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { [catcher] in catcher.deliver(number) }
            await withCheckedContinuation { (registered: CheckedContinuation<Void, Never>) in
                source.setRegistrationHandler { registered.resume() }
                source.resume()
            }
            catcher.sources.withLock { $0.append(SourceBox(source: source)) }
        }
        return catcher
    }

    private func deliver(_ number: Int32) {
        let waiter = state.withLock { state -> CheckedContinuation<Int32?, Never>? in
            if state.received == nil { state.received = number }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: number)
    }

    /// The first signal caught (at once if one already was); nil when the waiting task is cancelled first.
    public func next() async -> Int32? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Int32?, Never>) in
                let received = state.withLock { state -> Int32?? in
                    if let received = state.received { return .some(received) }
                    if Task.isCancelled { return .some(nil) }
                    state.waiter = continuation
                    return nil
                }
                if let received { continuation.resume(returning: received) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Int32?, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    /// Stops catching. The signals stay ignored (the process is shutting down) unless `restoreDefaults`.
    public func cancel(restoreDefaults: Bool = false) {
        for box in sources.withLock({ $0 }) { box.source.cancel() }
        if restoreDefaults {
            for number in numbers { signal(number, SIG_DFL) }
        }
    }

    /// A Dispatch source is thread-safe but not marked Sendable.
    /// Unchecked Sendable: Dispatch sources are thread-safe but not annotated.
    private struct SourceBox: @unchecked Sendable {
        let source: any DispatchSourceSignal
    }
}

/// Suspends until the calling task is cancelled: the body of a service whose work runs on threads of its own
/// (the HTTP server, the admin socket) between its start and its stop.
public func untilCancelled() async {
    while !Task.isCancelled {
        try? await Task.sleep(for: .seconds(3600))
    }
}
