import Foundation
import Synchronization
import VaultCore
import VaultCrypto

/// Keeps card security codes in memory only, each in a buffer wiped when released, for the first payment or
/// validation of the card, and at most ``PaymentsConfiguration/securityCodeRetention`` (1 hour). Never written
/// anywhere: a restart forgets them.
public final class SecurityCodeHold: Sendable {
    private struct Entry: Sendable {
        var code: SecureBytes
        var expiresAt: Date
    }

    private let entries = Mutex<[String: Entry]>([:])
    private let clock: any WallClock

    public init(clock: any WallClock) {
        self.clock = clock
    }

    private static func key(_ clientId: String, _ cardId: String) -> String { clientId + ":" + cardId }

    /// Holds `digits` (ASCII) for card `cardId` of `clientId` for `lifetime` seconds.
    func hold(clientId: String, cardId: String, digits: some Collection<UInt8>, lifetime: TimeInterval) {
        let entry = Entry(code: SecureBytes(copying: digits), expiresAt: clock.now.addingTimeInterval(lifetime))
        entries.withLock { entries in
            purge(&entries)
            entries[Self.key(clientId, cardId)] = entry
        }
    }

    /// Takes the security code of a card out of the hold (it is gone afterwards), or nil when none is held or it
    /// expired. The buffer is wiped when the caller drops it.
    public func take(clientId: String, cardId: String) -> SecureBytes? {
        let now = clock.now
        return entries.withLock { entries in
            guard let entry = entries.removeValue(forKey: Self.key(clientId, cardId)), entry.expiresAt > now else {
                return nil
            }
            return entry.code
        }
    }

    /// Whether a code is held for the card (without taking it).
    public func isHeld(clientId: String, cardId: String) -> Bool {
        let now = clock.now
        return entries.withLock { entries in
            guard let entry = entries[Self.key(clientId, cardId)] else { return false }
            return entry.expiresAt > now
        }
    }

    /// Drops the code of a card, if any.
    func discard(clientId: String, cardId: String) {
        _ = entries.withLock { $0.removeValue(forKey: Self.key(clientId, cardId)) }
    }

    /// Wipes every expired code; returns how many remain held.
    @discardableResult
    public func purgeExpired() -> Int {
        entries.withLock { entries in
            purge(&entries)
            return entries.count
        }
    }

    private func purge(_ entries: inout [String: Entry]) {
        let now = clock.now
        entries = entries.filter { $0.value.expiresAt > now }
    }
}
