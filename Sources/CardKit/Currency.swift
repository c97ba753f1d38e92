/// An ISO 4217 currency: its alphabetic code and the number of digits of its minor unit (its exponent).
public struct Currency: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    /// The three-letter code (`"EUR"`).
    public let code: String
    /// Digits after the decimal point: 0 for JPY, 2 for EUR, 3 for BHD, 4 for CLF.
    public let minorUnits: Int

    private init(uncheckedCode code: String, minorUnits: Int) {
        self.code = code
        self.minorUnits = minorUnits
    }

    /// The currency with this code (upper case, as ISO 4217 writes it), or nil when the table has none.
    public init?(code: String) {
        guard let minorUnits = Self.table[code] else { return nil }
        self.init(uncheckedCode: code, minorUnits: minorUnits)
    }

    /// Every currency in the table, ordered by code.
    public static let all: [Currency] = table.keys.sorted().map { Currency(uncheckedCode: $0, minorUnits: table[$0]!) }

    /// The euro.
    public static let eur = Currency(uncheckedCode: "EUR", minorUnits: 2)
    /// The US dollar.
    public static let usd = Currency(uncheckedCode: "USD", minorUnits: 2)
    /// The pound sterling.
    public static let gbp = Currency(uncheckedCode: "GBP", minorUnits: 2)
    /// The yen (no minor unit).
    public static let jpy = Currency(uncheckedCode: "JPY", minorUnits: 0)

    /// 10 to the power of ``minorUnits``: how many minor units make one major unit.
    public var minorUnitsPerMajor: Int64 {
        var factor: Int64 = 1
        for _ in 0..<minorUnits { factor *= 10 }
        return factor
    }

    public var description: String { code }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.code < rhs.code }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let code = try container.decode(String.self)
        guard let currency = Currency(code: code) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an ISO 4217 currency code")
        }
        self = currency
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(code)
    }

    /// ISO 4217 list one, currencies with a minor unit, code → exponent.
    ///
    /// Source: ISO 4217 list one (SIX Financial Information, the maintenance agency) as carried by Debian's
    /// `iso-codes` 4.15 (`/usr/share/iso-codes/json/iso_4217.json`, codes only), with the minor units of list one;
    /// the precious metals, SDR, bond-market units and test codes (XAU, XAG, XPD, XPT, XDR, XBA–XBD, XSU, XUA,
    /// XTS, XXX), which have no minor unit, are left out; HRK (replaced by EUR on 2023-01-01) is left out; ZWG
    /// (amendment 177, 2024) and XCG (amendment 176, 2025) are added.
    private static let table: [String: Int] = {
        let zero = "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF"
        let three = "BHD IQD JOD KWD LYD OMR TND"
        let four = "CLF UYW"
        let two = """
            AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BOV BRL BSD BTN BWP BYN BZD CAD CDF \
            CHE CHF CHW CNY COP COU CRC CUC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GTQ \
            GYD HKD HNL HTG HUF IDR ILS INR IRR JMD KES KGS KHR KPW KYD KZT LAK LBP LKR LRD LSL MAD MDL MGA MKD MMK \
            MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD PAB PEN PGK PHP PKR PLN QAR RON RSD RUB \
            SAR SBD SCR SDG SEK SGD SHP SLE SLL SOS SRD SSP STN SVC SYP SZL THB TJS TMT TOP TRY TTD TWD TZS UAH USD \
            USN UYU UZS VED VES WST XCD XCG YER ZAR ZMW ZWG ZWL
            """
        var table = [String: Int]()
        for (list, exponent) in [(zero, 0), (two, 2), (three, 3), (four, 4)] {
            for code in list.split(separator: " ") { table[String(code)] = exponent }
        }
        return table
    }()
}
