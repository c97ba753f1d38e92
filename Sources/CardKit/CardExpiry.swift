public import Foundation

/// A card's expiry month. A card is valid through the last day of that month (UTC).
public struct CardExpiry: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// How far ahead an expiry date may lie.
    public static let maximumYearsAhead = 20

    /// The month, 1–12.
    public let month: Int
    /// The four-digit year (2000 + YY for two-digit input).
    public let year: Int

    /// Creates an expiry from a month (1–12) and a four-digit year.
    /// - Throws: ``CardValidationError`` `invalidExpiry` when the month is not 1–12 or the year not 2000–2099.
    public init(month: Int, year: Int) throws(CardValidationError) {
        guard (1...12).contains(month), (2000...2099).contains(year) else { throw .invalidExpiry }
        self.month = month
        self.year = year
    }

    /// Parses `MMYY` (the wire form) or `MM/YY` (as typed on checkout forms).
    /// - Throws: ``CardValidationError`` `invalidExpiry` for anything else or a month outside 01–12.
    public init(parsing text: String) throws(CardValidationError) {
        var digits = [Int]()
        digits.reserveCapacity(4)
        var position = 0
        for byte in text.utf8 {
            defer { position += 1 }
            if byte == 0x2F, position == 2, text.utf8.count == 5 { continue }
            let digit = Int(byte &- 0x30)
            guard digit < 10, digits.count < 4 else { throw .invalidExpiry }
            digits.append(digit)
        }
        guard digits.count == 4, position == 4 || position == 5 else { throw .invalidExpiry }
        try self.init(month: digits[0] * 10 + digits[1], year: 2000 + digits[2] * 10 + digits[3])
    }

    /// The wire form `MMYY` (`"1229"`).
    public var mmyy: String {
        let yy = year % 100
        // Four ASCII digits written in place: a small string, no allocation.
        let zero = UInt8(ascii: "0")
        return String(unsafeUninitializedCapacity: 4) { text in
            text[0] = zero + UInt8(month / 10)
            text[1] = zero + UInt8(month % 10)
            text[2] = zero + UInt8(yy / 10)
            text[3] = zero + UInt8(yy % 10)
            return 4
        }
    }

    /// `MM/YY`, as printed on the card.
    public var description: String {
        let text = mmyy
        return String(text.prefix(2)) + "/" + String(text.suffix(2))
    }

    /// True when the card has not expired at `date` (UTC) and expires at most 20 years after `date`'s month.
    public func isValid(at date: Date) -> Bool { (try? validate(at: date)) != nil }

    /// Checks the expiry against `date`, which callers take from their injected clock.
    /// - Throws: ``CardValidationError`` `expired` after the last day of the month (UTC), `expiryTooFarAhead` when
    ///   the month lies more than 20 years (240 months) after the month of `date`.
    public func validate(at date: Date) throws(CardValidationError) {
        let now = UTCMonth(date)
        let months = (year * 12 + month - 1) - (now.year * 12 + now.month - 1)
        if months < 0 { throw .expired }
        if months > Self.maximumYearsAhead * 12 { throw .expiryTooFarAhead }
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { (lhs.year, lhs.month) < (rhs.year, rhs.month) }
}

/// The UTC year and month of an instant, computed from Unix time with the proleptic Gregorian calendar
/// (days-to-civil conversion), without `Calendar` or time zone data.
struct UTCMonth: Hashable {
    var year: Int
    var month: Int

    init(_ date: Date) {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        var days = seconds / 86_400
        if seconds % 86_400 < 0 { days -= 1 }
        // Shift the epoch to 0000-03-01 so that leap days fall at the end of each year, then count 400-year eras.
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        self.year = Int(yearOfEra + era * 400) + (month <= 2 ? 1 : 0)
        self.month = Int(month)
    }
}
