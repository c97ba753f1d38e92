import Foundation
import Testing

@testable import CardKit

/// An instant given as UTC calendar fields.
func utc(_ year: Int, _ month: Int, _ day: Int, _ hour: Int = 0, _ minute: Int = 0, _ second: Int = 0) -> Date {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC")!
    let components = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    return calendar.date(from: components)!
}

@Suite struct CardExpiryTests {
    @Test(arguments: [
        ("1229", 12, 2029), ("12/29", 12, 2029), ("0125", 1, 2025), ("01/00", 1, 2000), ("0999", 9, 2099),
    ])
    func parsesMMYYAndMMSlashYY(text: String, month: Int, year: Int) throws {
        let expiry = try CardExpiry(parsing: text)
        #expect(expiry.month == month && expiry.year == year)
        #expect(expiry.mmyy == String(text.filter { $0 != "/" }))
    }

    @Test(arguments: [
        "", "1", "122", "12290", "1329", "0029", "0013", "12-29", "12 29", "1/29", "12/2029", "122/9", "/1229",
        "1229/", "12//29", "ab29", "12a9", "١٢٢٩", " 1229", "1229 ", "12/299",
    ])
    func refusesMalformedDates(text: String) {
        #expect(throws: CardValidationError(.invalidExpiry, "")) { try CardExpiry(parsing: text) }
    }

    @Test func formatsBothWays() throws {
        let expiry = try CardExpiry(month: 3, year: 2031)
        #expect(expiry.mmyy == "0331")
        #expect(expiry.description == "03/31")
        #expect(throws: CardValidationError(.invalidExpiry, "")) { try CardExpiry(month: 13, year: 2030) }
        #expect(throws: CardValidationError(.invalidExpiry, "")) { try CardExpiry(month: 0, year: 2030) }
        #expect(throws: CardValidationError(.invalidExpiry, "")) { try CardExpiry(month: 1, year: 1999) }
    }

    /// Valid through the last second of the last day of its month, UTC; expired from the first second after.
    @Test(arguments: [
        ("1225", utc(2025, 12, 31, 23, 59, 59), true),
        ("1225", utc(2026, 1, 1), false),
        ("0126", utc(2025, 12, 31, 23, 59, 59), true),
        ("0126", utc(2026, 1, 31, 23, 59, 59), true),
        ("0126", utc(2026, 2, 1), false),
        ("0228", utc(2028, 2, 29, 12), true),  // leap year: February has 29 days
        ("0228", utc(2028, 2, 29, 23, 59, 59), true),
        ("0228", utc(2028, 3, 1), false),
        ("0227", utc(2027, 2, 28, 23, 59, 59), true),  // common year
        ("0227", utc(2027, 3, 1), false),
        ("0200", utc(2000, 2, 29, 23, 59, 59), true),  // 2000 is a leap year (divisible by 400)
        ("0200", utc(2000, 3, 1), false),
        ("0430", utc(2030, 4, 30, 23, 59, 59), true),
        ("0430", utc(2030, 5, 1), false),
        ("1229", utc(2024, 6, 15), true),
        ("0124", utc(2024, 6, 15), false),
    ])
    func expiresAfterTheLastDayOfItsMonth(text: String, now: Date, valid: Bool) throws {
        let expiry = try CardExpiry(parsing: text)
        #expect(expiry.isValid(at: now) == valid)
        if !valid {
            #expect(throws: CardValidationError(.expired, "")) { try expiry.validate(at: now) }
        }
    }

    @Test func atMostTwentyYearsAhead() throws {
        let now = utc(2026, 6, 15)
        #expect(try CardExpiry(parsing: "0646").isValid(at: now))
        #expect(throws: CardValidationError(.expiryTooFarAhead, "")) {
            try CardExpiry(parsing: "0746").validate(at: now)
        }
        // From the last day of December, the limit is December twenty years on.
        let newYearsEve = utc(2025, 12, 31, 23, 59, 59)
        #expect(try CardExpiry(parsing: "1245").isValid(at: newYearsEve))
        #expect(try !CardExpiry(parsing: "0146").isValid(at: newYearsEve))
        #expect(try CardExpiry(parsing: "0146").isValid(at: utc(2026, 1, 1)))
    }

    /// The clock-free UTC month agrees with Foundation's Gregorian calendar, including around leap days, century
    /// years and before 1970.
    @Test func utcMonthMatchesFoundationCalendar() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        var instants = [Date]()
        for year in [1900, 1969, 1970, 1999, 2000, 2024, 2025, 2028, 2099, 2100, 2400] {
            for (month, day) in [(1, 1), (2, 28), (2, 29), (3, 1), (12, 31)] {
                let start = utc(year, month, day)
                instants += [start, start.addingTimeInterval(-1), start.addingTimeInterval(86_399)]
            }
        }
        var generator = SplitMix64(seed: 3)
        for _ in 0..<5_000 {
            let offset = Double(generator.next() % 8_000_000_000) - 4_000_000_000
            instants.append(Date(timeIntervalSince1970: offset + 0.5))
        }
        for instant in instants {
            let fields = calendar.dateComponents([.year, .month], from: instant)
            let month = UTCMonth(instant)
            #expect(month.year == fields.year && month.month == fields.month, "\(instant)")
        }
    }

    @Test func ordersByYearThenMonth() throws {
        #expect(try CardExpiry(parsing: "1225") < CardExpiry(parsing: "0126"))
        #expect(try CardExpiry(parsing: "0226") > CardExpiry(parsing: "0126"))
    }
}

@Suite struct SecurityCodeTests {
    @Test(arguments: [
        ("123", CardBrand.visa, true), ("000", .visa, true), ("1234", .visa, false), ("12", .visa, false),
        ("1234", .amex, true), ("123", .amex, false), ("12345", .amex, false), ("123", .mir, true),
        ("123", .unionpay, true), ("123", .discover, true), ("1234", .discover, false), ("123", .elo, true),
        ("12a", .visa, false), ("", .visa, false), (" 123", .visa, false), ("123 ", .visa, false),
        ("1 23", .visa, false), ("-12", .visa, false), ("１２３", .visa, false), ("12.3", .visa, false),
    ])
    func digitsOnlyOfExactlyTheBrandsSize(text: String, brand: CardBrand, valid: Bool) throws {
        #expect(SecurityCode.isValid(text, for: brand) == valid)
        if valid {
            #expect(try SecurityCode(text, brand: brand).unmaskedDigits == text)
        } else {
            #expect(throws: CardValidationError(.invalidSecurityCode, "")) { try SecurityCode(text, brand: brand) }
        }
    }

    @Test func neverPrintsTheDigits() throws {
        let code = try SecurityCode("7391", brand: .amex)
        var dumped = ""
        dump(code, to: &dumped)
        for form in ["\(code)", String(reflecting: code), dumped, "\([code])"] {
            #expect(!form.contains("7391"))
        }
    }
}
