public import VaultCore

/// How the daemon runs and stops: every long-running part is a ``Service`` of one ``ServiceGroup``; the first
/// termination signal shuts the group down; once the last service has returned (connections drained, the last
/// sweep and admin command finished) the resources they used are closed, the store last.
public enum DaemonLifecycle {
    /// Runs `services` until `stop` returns a signal number (or a service fails or stops by itself), awaits every
    /// one of them, then calls `close`. Rethrows the first service failure after `close`.
    ///
    /// - Parameters:
    ///   - services: the daemon's services (HTTP server, admin socket, sweepers ...).
    ///   - logger: where the shutdown is logged: "shutting down" with the signal, "service stopped" per service,
    ///     "store closed", then "stopped".
    ///   - stop: waits for the signal that stops the daemon (``TerminationSignals/next()``); nil when the wait was
    ///     cancelled because the group stopped on its own.
    ///   - close: closes what the services used (the store); runs after every service has returned.
    public static func run(
        services: [any Service], logger: Logger, until stop: @escaping @Sendable () async -> Int32?,
        close: () -> Void
    ) async throws {
        let logged = services.map { LoggedService(service: $0, logger: logger) }
        let group = ServiceGroup(services: logged, logger: logger)
        let watcher = Task {
            guard let signal = await stop() else { return }
            logger.notice("shutting down", ["signal": .int(Int(signal))])
            group.shutdown()
        }
        var failure: (any Error)?
        do {
            try await group.run()
        } catch {
            failure = error
        }
        watcher.cancel()
        await watcher.value
        close()
        logger.notice("store closed")
        logger.notice("stopped")
        if let failure { throw failure }
    }
}

/// A service that logs when it has returned, so the log shows every job ending before the store closes.
private struct LoggedService: Service {
    let service: any Service
    let logger: Logger
    var name: String { service.name }

    func run() async throws {
        defer { logger.info("service stopped", ["service": .string(service.name)]) }
        try await service.run()
    }
}
