/// Decides which daemon runs a piece of background work when several share one database.
///
/// A periodic job (challenge sweeper, expiries, cleanup) wraps each round in ``runIfLeader(_:_:)``: the
/// round runs only while this process holds the job's leadership, so exactly one daemon does it at a
/// time, and another takes over when that one dies. A daemon that owns its store alone
/// (``SoleLeadership``) always leads.
public protocol Leadership: Sendable {
    /// Runs `round` if this process leads `job` now (taking the lead when nobody holds it); returns
    /// whether it ran.
    @discardableResult
    func runIfLeader(_ job: String, _ round: @Sendable () async throws -> Void) async throws -> Bool
}

/// The leadership of a process that is alone with its store: it leads every job.
public struct SoleLeadership: Leadership {
    public init() {}

    @discardableResult
    public func runIfLeader(_ job: String, _ round: @Sendable () async throws -> Void) async throws -> Bool {
        try await round()
        return true
    }
}

extension PeriodicService {
    /// A periodic service whose rounds run only on the daemon that leads `name` (see ``Leadership``).
    public static func led(
        by leadership: any Leadership, name: String, interval: Duration, logger: Logger,
        work: @escaping @Sendable () async throws -> Void
    ) -> PeriodicService {
        PeriodicService(name: name, interval: interval, logger: logger) {
            try await leadership.runIfLeader(name, work)
        }
    }
}
