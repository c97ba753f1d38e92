import CardKit
import Foundation
import Testing

@Suite struct CurrencyTests {
    @Test(arguments: [
        ("JPY", 0), ("KRW", 0), ("CLP", 0), ("ISK", 0), ("VND", 0), ("XOF", 0), ("EUR", 2), ("USD", 2), ("GBP", 2),
        ("CHF", 2), ("HUF", 2), ("BHD", 3), ("KWD", 3), ("JOD", 3), ("OMR", 3), ("TND", 3), ("IQD", 3), ("LYD", 3),
        ("CLF", 4), ("UYW", 4), ("XCG", 2), ("ZWG", 2),
    ])
    func exponents(code: String, minorUnits: Int) throws {
        let currency = try #require(Currency(code: code))
        #expect(currency.minorUnits == minorUnits)
        #expect(currency.code == code)
    }

    @Test(arguments: ["XPX", "eur", "Eur", "EURO", "EU", "", "XAU", "XXX", "XTS", "HRK", "€"])
    func unknownCodes(code: String) {
        #expect(Currency(code: code) == nil)
    }

    @Test func tableIsWellFormed() {
        #expect(Currency.all.count == 169)
        #expect(Set(Currency.all.map(\.code)).count == Currency.all.count)
        #expect(Currency.all == Currency.all.sorted())
        for currency in Currency.all {
            #expect(currency.code.utf8.count == 3 && currency.code.utf8.allSatisfy { (0x41...0x5A).contains($0) })
            #expect([0, 2, 3, 4].contains(currency.minorUnits))
            #expect(Currency(code: currency.code) == currency)
        }
        #expect(Currency.eur == Currency(code: "EUR") && Currency.jpy.minorUnitsPerMajor == 1)
        #expect(Currency(code: "BHD")?.minorUnitsPerMajor == 1_000)
    }

    @Test func codableAsTheCode() throws {
        let data = try JSONEncoder().encode([Currency.eur])
        #expect(String(decoding: data, as: UTF8.self) == #"["EUR"]"#)
        #expect(try JSONDecoder().decode([Currency].self, from: Data(#"["BHD"]"#.utf8)) == [Currency(code: "BHD")!])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([Currency].self, from: Data(#"["XPX"]"#.utf8)) }
    }
}

@Suite struct MoneyTests {
    static let bhd = Currency(code: "BHD")!
    static let clf = Currency(code: "CLF")!

    @Test(arguments: [
        ("12.55", Currency.usd, Int64(1255)), ("12.5", .usd, 1250), ("12", .usd, 1200), ("0", .usd, 0),
        ("0.01", .usd, 1), ("0.10", .eur, 10), ("007.50", .eur, 750), ("1255", .jpy, 1255), ("0", .jpy, 0),
        ("1.255", bhd, 1255), ("1.2", bhd, 1200), ("1", bhd, 1000), ("0.001", bhd, 1), ("1.0001", clf, 10001),
        ("92233720368547758.07", .usd, Int64.max), ("9223372036854775807", .jpy, Int64.max),
        ("9223372036854775.807", bhd, Int64.max),
    ])
    func parsesToMinorUnits(text: String, currency: Currency, units: Int64) throws {
        let money = try Money(parsing: text, currency: currency)
        #expect(money.minorUnits == units)
        #expect(money.currency == currency)
    }

    @Test(arguments: [
        ("12.456", Currency.usd, MoneyError.Code.tooManyDecimals), ("12.550", .usd, .tooManyDecimals),
        ("12.5", .jpy, .tooManyDecimals), ("12.0", .jpy, .tooManyDecimals), ("1.2345", bhd, .tooManyDecimals),
        ("1.000000000000000000000000", .usd, .tooManyDecimals),
        ("-1", .usd, .negativeAmount), ("-0.01", .usd, .negativeAmount), ("-0", .usd, .negativeAmount),
        ("92233720368547758.08", .usd, .overflow), ("9223372036854775808", .jpy, .overflow),
        ("92233720368547759", .usd, .overflow), ("99999999999999999999999", .usd, .overflow),
        ("9223372036854775.808", bhd, .overflow),
        ("", .usd, .invalidFormat), (".", .usd, .invalidFormat), ("12.", .usd, .invalidFormat),
        (".5", .usd, .invalidFormat), ("+12", .usd, .invalidFormat), ("1,000.00", .usd, .invalidFormat),
        ("1 000", .usd, .invalidFormat), (" 12", .usd, .invalidFormat), ("12 ", .usd, .invalidFormat),
        ("1e3", .usd, .invalidFormat), ("12.5.1", .usd, .invalidFormat), ("12,55", .eur, .invalidFormat),
        ("abc", .usd, .invalidFormat), ("0x10", .usd, .invalidFormat), ("１２", .usd, .invalidFormat),
        ("12-", .usd, .invalidFormat), ("NaN", .usd, .invalidFormat), ("12.5$", .usd, .invalidFormat),
    ])
    func refusesWithACode(text: String, currency: Currency, code: MoneyError.Code) {
        #expect(throws: MoneyError(code, "")) { try Money(parsing: text, currency: currency) }
    }

    @Test func unknownCurrencyCode() throws {
        #expect(throws: MoneyError(.unknownCurrency, "")) { try Money(parsing: "1", currencyCode: "XPX") }
        #expect(try Money(parsing: "1.5", currencyCode: "KWD").minorUnits == 1500)
    }

    @Test(arguments: [
        (Int64(1255), Currency.usd, "12.55"), (5, .usd, "0.05"), (0, .eur, "0.00"), (100, .eur, "1.00"),
        (-5, .eur, "-0.05"), (-1234, .eur, "-12.34"), (1255, .jpy, "1255"), (-7, .jpy, "-7"), (1255, bhd, "1.255"),
        (1, bhd, "0.001"), (10001, clf, "1.0001"), (Int64.max, .usd, "92233720368547758.07"),
        (Int64.min, .usd, "-92233720368547758.08"),
    ])
    func formatsAsDecimal(units: Int64, currency: Currency, text: String) throws {
        let money = Money(minorUnits: units, currency: currency)
        #expect(money.decimalString == text)
        #expect(money.description == text + " " + currency.code)
        if units >= 0 {
            #expect(try Money(parsing: text, currency: currency) == money)
        }
    }

    @Test func roundTripsEveryCurrency() throws {
        var generator = SplitMix64(seed: 11)
        for currency in Currency.all {
            for _ in 0..<20 {
                let units = Int64(generator.next() % 1_000_000_000_000)
                let money = Money(minorUnits: units, currency: currency)
                #expect(try Money(parsing: money.decimalString, currency: currency) == money)
            }
        }
    }

    @Test func arithmeticChecksCurrencyAndOverflow() throws {
        let ten = Money(minorUnits: 1000, currency: .eur)
        let fee = Money(minorUnits: 100, currency: .eur)
        #expect(try ten.subtracting(fee) == Money(minorUnits: 900, currency: .eur))
        #expect(try ten.adding(fee).minorUnits == 1100)
        #expect(try fee.subtracting(ten).minorUnits == -900)
        #expect(throws: MoneyError(.currencyMismatch, "")) { try ten.adding(Money(minorUnits: 1, currency: .usd)) }
        #expect(throws: MoneyError(.overflow, "")) {
            try Money(minorUnits: .max, currency: .eur).adding(Money(minorUnits: 1, currency: .eur))
        }
        #expect(throws: MoneyError(.overflow, "")) {
            try Money(minorUnits: .min, currency: .eur).subtracting(Money(minorUnits: 1, currency: .eur))
        }
    }
}
