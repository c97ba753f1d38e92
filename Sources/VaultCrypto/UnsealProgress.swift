public import Foundation
import VaultCore

/// The text form of a ``KeyShare``, one line an operator can copy: `cvs1-<threshold>-<index>-<hex>-<kcv>`, the
/// share's bytes as 64 hexadecimal digits and its own key check value as 6.
public enum ShareText {
    /// The line for `share`.
    public static func encode(_ share: KeyShare) -> String {
        let body = share.bytes.withUnsafeBytes { Identifier.hex($0) }
        return "cvs1-\(share.threshold)-\(share.index)-\(body)-\(share.checkValue)"
    }

    /// The value of one hexadecimal digit (either case), nil for anything else.
    private static func hexValue(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The index a share line claims, if its shape shows one (for the audit of a refused share).
    public static func index(of text: some StringProtocol) -> UInt8? {
        let parts = text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "-")
        guard parts.count == 5, parts[0] == "cvs1", let index = UInt8(parts[2]), index > 0 else { return nil }
        return index
    }

    /// Parses and checks one share line (surrounding white space ignored).
    /// - Throws: ``KeyRingError`` `.malformed`, or `.checkValue` naming the index when the bytes were mistyped.
    public static func parse(_ text: some StringProtocol) throws(KeyRingError) -> KeyShare {
        let parts = text.trimmingCharacters(in: .whitespacesAndNewlines).split(
            separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0] == "cvs1", let threshold = Int(parts[1]),
            (2...KeyShares.maximumShares).contains(threshold), let index = UInt8(parts[2]), index > 0,
            parts[3].utf8.count == 64, parts[4].utf8.count == 2 * KeyCheckValue.size
        else {
            throw KeyRingError(.malformedShare, "not a key share: expected cvs1-<threshold>-<index>-<64 hex>-<6 hex>")
        }
        let digits = Array(parts[3].utf8)
        var valid = true
        let bytes = SecureBytes(count: 32) { out in
            for position in 0..<32 {
                guard let high = hexValue(digits[2 * position]), let low = hexValue(digits[2 * position + 1]) else {
                    valid = false
                    return
                }
                out[position] = high << 4 | low
            }
        }
        guard valid else {
            throw KeyRingError(.malformedShare, "share \(index) holds a character that is not hexadecimal")
        }
        let share = KeyShare(index: index, threshold: threshold, bytes: bytes)
        guard share.checkValue == parts[4].lowercased() else {
            throw KeyRingError(.checkValue, "share \(index) does not match its check value: mistyped or damaged")
        }
        return share
    }
}

/// The shares given so far toward unsealing: a pure state, fed by the admin socket, with an injected clock.
/// Shares are kept in secure memory and dropped after ``timeout`` without a new one, on ``reset()``, and once
/// the threshold is reached.
public struct UnsealProgress: Sendable {
    /// Seconds after the last accepted share when progress is dropped.
    public static let timeout: TimeInterval = 600

    /// The threshold of the shares given so far (nil before the first).
    public private(set) var threshold: Int?
    private var shares: [KeyShare] = []
    private var lastShare: Date?

    public init() {}

    /// The indexes accepted so far, in order.
    public var indexes: [UInt8] { shares.map(\.index) }

    /// Shares accepted so far.
    public var count: Int { shares.count }

    /// Drops every share given so far.
    public mutating func reset() {
        shares = []
        threshold = nil
        lastShare = nil
    }

    /// Drops the progress if the last share is older than ``timeout`` at `now`.
    /// - Returns: true when progress was dropped.
    @discardableResult
    public mutating func expire(now: Date) -> Bool {
        guard let lastShare, now.timeIntervalSince(lastShare) >= Self.timeout else { return false }
        reset()
        return true
    }

    /// Adds a share (already checked against its own check value by ``ShareText/parse(_:)``).
    /// - Returns: the rebuilt secret once `threshold` shares are in (progress is then cleared), else nil.
    /// - Throws: `.repeatedIndex` or `.thresholdMismatch`, naming the index; the progress is unchanged.
    public mutating func add(_ share: KeyShare, now: Date) throws(KeyRingError) -> SecureBytes? {
        expire(now: now)
        if let threshold, threshold != share.threshold {
            throw KeyRingError(
                .thresholdMismatch,
                "share \(share.index) belongs to a split needing \(share.threshold) shares, not \(threshold)")
        }
        guard !shares.contains(where: { $0.index == share.index }) else {
            throw KeyRingError(.repeatedIndex, "share \(share.index) was given already")
        }
        threshold = share.threshold
        shares.append(share)
        lastShare = now
        guard shares.count >= share.threshold else { return nil }
        let secret = KeyShares.combine(shares)
        reset()
        return secret
    }
}
