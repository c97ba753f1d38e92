/// The UTC calendar fields of a Unix time, computed directly (proleptic Gregorian, H. Hinnant's
/// days-to-civil algorithm) without `gmtime_r` or `DateFormatter`, for hot-path formatting.
public struct UTCDateParts: Sendable, Equatable {
    public var year: Int
    public var month: Int
    public var day: Int
    /// 0 = Sunday.
    public var weekday: Int
    public var secondOfDay: Int

    /// The fields of `seconds` since 1970-01-01T00:00:00Z (negative values allowed).
    public init(unixSeconds seconds: Int64) {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        secondOfDay = Int(seconds - days * 86_400)
        weekday = Int(((days % 7) + 7 + 4) % 7)  // 1970-01-01 was a Thursday
        // Shift the epoch to 0000-03-01 so leap days fall at the end of each year, then count 400-year eras.
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        day = Int(dayOfYear - (153 * monthIndex + 2) / 5 + 1)
        month = Int(monthIndex < 10 ? monthIndex + 3 : monthIndex - 9)
        year = Int(yearOfEra + era * 400 + (month <= 2 ? 1 : 0))
    }
}
