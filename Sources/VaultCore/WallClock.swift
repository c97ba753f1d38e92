public import Foundation

/// The source of wall-clock time. Inject it; never call `Date()` in domain code.
public protocol WallClock: Sendable {
    var now: Date { get }
}

/// The system's real time.
public struct SystemClock: WallClock {
    public init() {}
    public var now: Date { Date() }
}

/// A clock tests move by hand.
public final class ManualClock: WallClock {
    private let current: Locked<Date>

    public init(_ start: Date = Date(timeIntervalSince1970: 1_767_225_600)) {  // 2026-01-01T00:00:00Z
        current = Locked(start)
    }

    public var now: Date { current.withLock { $0 } }

    /// Moves the clock forward by `seconds`.
    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }

    /// Sets the clock to `date`.
    public func set(_ date: Date) {
        current.withLock { $0 = date }
    }
}

extension Date {
    /// Whole milliseconds since 1970-01-01T00:00:00Z, rounded down (log stamps, the risk counters' refresh phases).
    public var millisecondsSince1970: Int64 { Int64((timeIntervalSince1970 * 1000).rounded(.down)) }
}
