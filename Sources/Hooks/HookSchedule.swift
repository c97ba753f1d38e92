/// When a failed delivery is tried again: every ``retryInterval`` seconds for the first hour after the first
/// attempt, then every 8 hours for 3 days; after the last of those fails, delivery is given up (and the hook
/// becomes INVALID). A pure value; the engine asks it after each failure.
///
/// With the default interval (600 s) an event is tried at 0, 10, 20 … 60 minutes, then 8, 16 … 72 hours after that:
/// 16 attempts over 73 hours.
public struct HookSchedule: Sendable, Equatable {
    /// Seconds between retries in the first hour (`hooks.retryIntervalSeconds`).
    public var retryInterval: Int64
    /// The first phase's length: one hour.
    public var firstPhase: Int64 = 3_600
    /// Seconds between retries after the first hour: 8 hours.
    public var slowInterval: Int64 = 8 * 3_600
    /// The second phase's length: 3 days.
    public var slowPhase: Int64 = 3 * 86_400

    public init(retryInterval: Int64 = 600) {
        self.retryInterval = max(1, retryInterval)
    }

    /// Retries in the first hour.
    var fastRetries: Int64 { firstPhase / retryInterval }
    /// Retries in the 3 days after it.
    var slowRetries: Int64 { slowPhase / slowInterval }

    /// How many attempts an event gets in all (the first one included).
    public var attempts: Int64 { 1 + fastRetries + slowRetries }

    /// Seconds after the first attempt at which retry number `retry` (1-based) is due, or nil when there is no
    /// such retry (give up).
    public func offset(ofRetry retry: Int64) -> Int64? {
        guard retry >= 1 else { return 0 }
        if retry <= fastRetries { return retry * retryInterval }
        let slow = retry - fastRetries
        guard slow <= slowRetries else { return nil }
        return firstPhase + slow * slowInterval
    }

    /// When to try again after `failures` failed attempts (the first at `firstAttempt`), at the earliest `now`;
    /// nil means give up.
    public func nextAttempt(afterFailures failures: Int64, firstAttempt: Int64, now: Int64) -> Int64? {
        guard let offset = offset(ofRetry: failures) else { return nil }
        return max(now, firstAttempt + offset)
    }
}
