package import Foundation
public import VaultCore

/// Keeps card security codes in memory only, each in a buffer wiped when released, for the first payment or
/// validation of the card, and at most the retention the caller gives (Payments' `securityCodeRetention`, 1 hour).
/// Never written anywhere: a restart forgets them.
public final class SecurityCodeHold: Sendable {
    private struct Entry: Sendable {
        var code: SecureBytes
        var expiresAt: Date
    }

    /// The held codes, and when ``hold(clientId:cardId:digits:lifetime:)`` may next sweep expired ones.
    private struct State: Sendable {
        var entries: [String: Entry] = [:]
        var nextSweep = Date.distantPast
        /// No held code expires before this (so there is nothing to sweep until then).
        var earliestExpiry = Date.distantFuture
    }

    private let state = Locked<State>(State())
    private let clock: any WallClock
    /// Sweeping on every hold would cost a pass over every held code per tokenization; sweeping at most this
    /// often keeps a hold O(1) on average. Expired codes are never handed out meanwhile (``take`` and ``isHeld``
    /// check the expiry), and the daemon's sweeper calls ``purgeExpired()`` on its own schedule.
    static let sweepInterval: TimeInterval = 1

    public init(clock: any WallClock) {
        self.clock = clock
    }

    private static func key(_ clientId: String, _ cardId: String) -> String { clientId + ":" + cardId }

    /// Holds `digits` (ASCII) for card `cardId` of `clientId` for `lifetime` seconds.
    package func hold(clientId: String, cardId: String, digits: some Collection<UInt8>, lifetime: TimeInterval) {
        let now = clock.now
        let entry = Entry(code: SecureBytes(copying: digits), expiresAt: now.addingTimeInterval(lifetime))
        state.withLock { state in
            if now >= state.earliestExpiry && now >= state.nextSweep {
                purge(&state, now: now)
                state.nextSweep = now.addingTimeInterval(Self.sweepInterval)
            }
            state.entries[Self.key(clientId, cardId)] = entry
            state.earliestExpiry = min(state.earliestExpiry, entry.expiresAt)
        }
    }

    /// Takes the security code of a card out of the hold (it is gone afterwards), or nil when none is held or it
    /// expired. The buffer is wiped when the caller drops it.
    public func take(clientId: String, cardId: String) -> SecureBytes? {
        let now = clock.now
        return state.withLock { state in
            guard let entry = state.entries.removeValue(forKey: Self.key(clientId, cardId)), entry.expiresAt > now
            else {
                return nil
            }
            return entry.code
        }
    }

    /// Whether a code is held for the card (without taking it).
    public func isHeld(clientId: String, cardId: String) -> Bool {
        let now = clock.now
        return state.withLock { state in
            guard let entry = state.entries[Self.key(clientId, cardId)] else { return false }
            return entry.expiresAt > now
        }
    }

    /// Drops the code of a card, if any.
    package func discard(clientId: String, cardId: String) {
        _ = state.withLock { $0.entries.removeValue(forKey: Self.key(clientId, cardId)) }
    }

    /// Wipes every expired code; returns how many remain held.
    @discardableResult
    public func purgeExpired() -> Int {
        let now = clock.now
        return state.withLock { state in
            purge(&state, now: now)
            return state.entries.count
        }
    }

    private func purge(_ state: inout State, now: Date) {
        state.entries = state.entries.filter { $0.value.expiresAt > now }
        state.earliestExpiry = state.entries.values.lazy.map(\.expiresAt).min() ?? .distantFuture
    }
}
