/// An amount of money: a currency and a whole number of its minor units (cents for EUR, yen for JPY, fils for BHD).
/// Never floating point.
public struct Money: Hashable, Sendable, CustomStringConvertible {
    /// The currency.
    public let currency: Currency
    /// The amount in minor units; negative only when arithmetic made it so (parsing refuses negatives).
    public let minorUnits: Int64

    /// An amount of `minorUnits` minor units of `currency`.
    public init(minorUnits: Int64, currency: Currency) {
        self.minorUnits = minorUnits
        self.currency = currency
    }

    /// Parses a plain decimal string strictly: digits, optionally a point and at most `currency.minorUnits`
    /// digits after it (`"12.55"` USD is 1255; `"12.456"` USD, `"12.5"` JPY, `"-1"`, `"1e3"`, `"1,000"`,
    /// `" 12"`, `"12."` and `".5"` are refused).
    /// - Throws: ``MoneyError`` `invalidFormat`, `tooManyDecimals`, `negativeAmount` or `overflow`.
    public init(parsing text: String, currency: Currency) throws(MoneyError) {
        var units: Int64 = 0
        var integerDigits = 0
        var fractionDigits = 0
        var sawPoint = false
        var first = true
        for byte in text.utf8 {
            defer { first = false }
            if byte == 0x2D, first { throw .negativeAmount }
            if byte == 0x2E {
                guard !sawPoint, integerDigits > 0 else { throw .invalidFormat }
                sawPoint = true
                continue
            }
            let digit = byte &- 0x30
            guard digit < 10 else { throw .invalidFormat }
            if sawPoint { fractionDigits += 1 } else { integerDigits += 1 }
            let (shifted, overflowA) = units.multipliedReportingOverflow(by: 10)
            let (sum, overflowB) = shifted.addingReportingOverflow(Int64(digit))
            guard !overflowA, !overflowB else {
                // Report the decimals error first when the input also has too many of them.
                if sawPoint, fractionDigits > currency.minorUnits { throw .tooManyDecimals }
                throw .overflow
            }
            units = sum
        }
        guard integerDigits > 0, !sawPoint || fractionDigits > 0 else { throw .invalidFormat }
        guard fractionDigits <= currency.minorUnits else { throw .tooManyDecimals }
        for _ in fractionDigits..<currency.minorUnits {
            let (scaled, overflow) = units.multipliedReportingOverflow(by: 10)
            guard !overflow else { throw .overflow }
            units = scaled
        }
        self.init(minorUnits: units, currency: currency)
    }

    /// Parses an amount in the currency with ISO 4217 code `code`.
    /// - Throws: ``MoneyError`` `unknownCurrency`, or as ``init(parsing:currency:)``.
    public init(parsing text: String, currencyCode code: String) throws(MoneyError) {
        guard let currency = Currency(code: code) else { throw .unknownCurrency }
        try self.init(parsing: text, currency: currency)
    }

    /// The amount as a decimal string with exactly the currency's number of decimals (`"12.55"`, `"1255"` for
    /// JPY, `"1.255"` for BHD, `"-0.05"`).
    public var decimalString: String {
        let digits = String(minorUnits.magnitude)
        let exponent = currency.minorUnits
        let sign = minorUnits < 0 ? "-" : ""
        guard exponent > 0 else { return sign + digits }
        let padded =
            digits.count > exponent ? digits : String(repeating: "0", count: exponent + 1 - digits.count) + digits
        let split = padded.index(padded.endIndex, offsetBy: -exponent)
        return sign + padded[..<split] + "." + padded[split...]
    }

    /// `"12.55 EUR"`.
    public var description: String { decimalString + " " + currency.code }

    /// The sum, in the same currency.
    /// - Throws: ``MoneyError`` `currencyMismatch` or `overflow`.
    public func adding(_ other: Money) throws(MoneyError) -> Money {
        guard other.currency == currency else { throw .currencyMismatch }
        let (sum, overflow) = minorUnits.addingReportingOverflow(other.minorUnits)
        guard !overflow else { throw .overflow }
        return Money(minorUnits: sum, currency: currency)
    }

    /// The difference, in the same currency (may be negative).
    /// - Throws: ``MoneyError`` `currencyMismatch` or `overflow`.
    public func subtracting(_ other: Money) throws(MoneyError) -> Money {
        guard other.currency == currency else { throw .currencyMismatch }
        let (difference, overflow) = minorUnits.subtractingReportingOverflow(other.minorUnits)
        guard !overflow else { throw .overflow }
        return Money(minorUnits: difference, currency: currency)
    }
}
