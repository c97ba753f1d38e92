import Foundation

/// A long-running part of the daemon: the HTTP server, the admin socket, a sweeper, a delivery engine.
///
/// `run()` works until its task is cancelled, then returns after it has stopped (connections drained,
/// the last sweep finished). It throws only for a failure that should stop the whole daemon. The
/// ``ServiceGroup`` runs every service of a process and awaits all of them before it closes the
/// resources they use (the store last).
public protocol Service: Sendable {
    /// A short name for logs ("http", "admin-socket", "record-sweeper").
    var name: String { get }

    /// Runs until the calling task is cancelled; returns once the service has stopped.
    func run() async throws
}

/// A service that does one piece of work every `interval` until cancelled: sweepers and expiries.
///
/// A failing round is logged (by error type only, never its message, which may hold input) and the
/// next round runs as scheduled; cancellation ends the sleep at once, and a round that has started
/// finishes before `run()` returns.
public struct PeriodicService: Service {
    public let name: String
    private let interval: Duration
    private let logger: Logger
    private let work: @Sendable () async throws -> Void

    /// - Parameters:
    ///   - name: the service's name in logs.
    ///   - interval: the pause between the end of one round and the start of the next.
    ///   - logger: where failed rounds are reported.
    ///   - work: one round; it should not hold on to cancellation-sensitive state between rounds.
    public init(
        name: String, interval: Duration, logger: Logger, work: @escaping @Sendable () async throws -> Void
    ) {
        self.name = name
        self.interval = interval
        self.logger = logger
        self.work = work
    }

    public func run() async throws {
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: interval)
            } catch {
                return  // cancelled while waiting: nothing is half done
            }
            do {
                try await work()
            } catch is CancellationError {
                return
            } catch {
                logger.warning(
                    "background round failed",
                    ["service": .string(name), "error": .string(String(describing: type(of: error)))])
            }
        }
    }
}

/// Runs a process's services together and shuts them down as one.
///
/// `run()` starts every service in its own child task and returns when all have returned. The group
/// stops (cancels every service) when ``shutdown()`` is called, when the calling task is cancelled, or
/// when a service throws or returns by itself; the first error is rethrown after all services have
/// stopped. Resources the services use are closed by the caller after `run()` returns, so a store is
/// never closed under a running job.
public final class ServiceGroup: Sendable {
    private let services: [any Service]
    private let logger: Logger
    private let state = Locked(State())

    private struct State {
        var shutdownRequested = false
        var cancel: (@Sendable () -> Void)?
    }

    public init(services: [any Service], logger: Logger) {
        self.services = services
        self.logger = logger
    }

    /// Asks every service to stop; `run()` returns once they have. Safe to call from any thread, any
    /// number of times, before or during `run()`.
    public func shutdown() {
        let cancel = state.withLock { state -> (@Sendable () -> Void)? in
            state.shutdownRequested = true
            return state.cancel
        }
        cancel?()
    }

    /// Runs the services until shutdown; rethrows the first service failure after all have stopped.
    public func run() async throws {
        let runner = Task { [services, logger] in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for service in services {
                    group.addTask {
                        do {
                            try await service.run()
                        } catch is CancellationError {
                            // a service stopped by cancellation has done its job
                        }
                        if !Task.isCancelled {
                            logger.notice("service stopped by itself", ["service": .string(service.name)])
                        }
                    }
                }
                var failure: (any Error)?
                while true {
                    do {
                        guard try await group.next() != nil else { break }
                    } catch {
                        if failure == nil { failure = error }
                    }
                    // The first service to stop, for any reason, stops the others.
                    group.cancelAll()
                }
                if let failure { throw failure }
            }
        }
        let alreadyRequested = state.withLock { state -> Bool in
            state.cancel = { runner.cancel() }
            return state.shutdownRequested
        }
        if alreadyRequested { runner.cancel() }
        try await withTaskCancellationHandler {
            try await runner.value
        } onCancel: {
            runner.cancel()
        }
    }
}
