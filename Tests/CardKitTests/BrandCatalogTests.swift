import Testing

@testable import CardKit

/// Luhn-valid numbers of each brand: network and gateway test cards (Mangopay 4970107111111119, 5033951000000004,
/// 375989111111119; Stripe/Braintree/Adyen sandbox cards) and generated numbers with a real prefix and a computed
/// check digit (verified outside Swift).
let numbersByBrand: [(CardBrand, [String])] = [
    (
        .visa,
        [
            "4111111111111111", "4012888888881881", "4970107111111119", "4970105181818183",
            "4526018159083016612", "431860913909960304",
        ]
    ),
    (
        .mastercard,
        [
            "5555555555554444", "5105105105105100", "2223003122003222", "2221000000000009",
            "2720999999999996",
        ]
    ),
    (.amex, ["378282246310005", "371449635398431", "375989111111119", "340000000000009"]),
    (.discover, ["6011111111111117", "6011000990139424", "6445644564456445", "6011824628194821990"]),
    (.diners, ["30569309025904", "38520000023237", "36227206271667", "3056930009020004", "3635181909378657970"]),
    (
        .jcb,
        [
            "3530111333300000", "3566002020360505", "3528000000000007", "3589543231948757491",
            "35281186252760189",
        ]
    ),
    (
        .unionpay,
        [
            "6200000000000005", "6250941006528599", "6212345678901265", "6282000000000006",
            "6221269555979711475", "8110104974650756", "81029170342365",
        ]
    ),
    (
        .maestro,
        [
            "6759649826438453", "5033951000000004", "6799990100000000019", "5018000000000009",
            "630467127688", "6759426846569", "5023212233079244024",
        ]
    ),
    (.mir, ["2200000000000004", "2204000000000000", "2204685995289078668", "22006617603137216"]),
    (.elo, ["6362970000457013", "5066991111111118", "4011780000000006", "5090000000000000", "6500310590109281"]),
    (.hiper, ["6370950000000005", "6375680000000003", "6373742337353794"]),
    (.hipercard, ["6062826786276634", "6062820524845321"]),
    (.troy, ["9792030000000000", "9792000000000003", "6587831115901395", "6508370462459570"]),
    (.verve, ["5061000000000005", "5078650000000008", "506121177774121541", "5079417280385280841"]),
    (.rupay, ["6521500000000006", "6080010000000009", "6069850148525382", "6085008853933636", "6531493875004741"]),
    (.naranja, ["5895626746595650", "4029180000000009", "5275723957551314"]),
]

/// A slow, obviously correct detector for cross-checking the trie: scan every row, keep the one that compares
/// the most digits, then the narrowest, then the earliest. Reads the first eight digits (at least eight needed).
func referenceBrand(_ digits: String, ranges: [BrandRange] = BrandCatalog.standardRanges) -> CardBrand? {
    referenceBrand(leading: UInt32(digits.prefix(8))!, ranges: ranges)
}

/// The same over the first eight digits as a number.
func referenceBrand(leading value: UInt32, ranges: [BrandRange] = BrandCatalog.standardRanges) -> CardBrand? {
    var best: (digits: Int, width: UInt32, brand: CardBrand)?
    for range in ranges {
        var prefix = value
        for _ in range.digits..<8 { prefix /= 10 }
        guard prefix >= range.low, prefix <= range.high else { continue }
        if let current = best,
            current.digits > range.digits || (current.digits == range.digits && current.width <= range.width)
        {
            continue
        }
        best = (range.digits, range.width, range.brand)
    }
    return best?.brand
}

@Suite struct BrandCatalogTests {
    let catalog = BrandCatalog.standard

    @Test(arguments: numbersByBrand)
    func detectsEveryBrandOnRealFormatNumbers(brand: CardBrand, numbers: [String]) throws {
        #expect(numbers.count >= 2)
        for number in numbers {
            #expect(catalog.brand(forDigits: number) == brand, "\(brand) number \(number.prefix(6))…")
            let check = CardNumberCheck(asciiDigits: number)
            #expect(check.isValid && check.brand == brand && check.luhnValid && check.lengthValid)
            #expect(brand.acceptsLength(number.count))
        }
    }

    /// Every brand of the issue is in the table.
    @Test func everyBrandHasRanges() {
        let covered = Set(BrandCatalog.standardRanges.map(\.brand))
        #expect(covered == Set(CardBrand.allCases))
        #expect(Set(numbersByBrand.map(\.0)) == Set(CardBrand.allCases))
    }

    /// Boundaries of the ranges the issue names, and their outer neighbours (padded to eight digits).
    @Test(
        arguments: [
            ("4", CardBrand.visa), ("31", nil),
            ("50", .maestro), ("51", .mastercard), ("55", .mastercard), ("56", .maestro),
            ("2220", nil), ("2221", .mastercard), ("2720", .mastercard), ("2721", nil), ("2299", .mastercard),
            ("2200", .mir), ("2204", .mir), ("2205", nil), ("2199", nil),
            ("33", nil), ("34", .amex), ("35", nil), ("36", .diners), ("37", .amex), ("38", .diners), ("39", .diners),
            ("299", nil), ("300", .diners), ("305", .diners), ("306", nil),
            ("6010", .maestro), ("6011", .discover), ("6012", .maestro), ("643", .maestro), ("644", .discover),
            ("649", .discover), ("65", .discover),
            ("1799", nil), ("1800", .jcb), ("1801", nil), ("2130", nil), ("2131", .jcb), ("2132", nil),
            ("3527", nil), ("3528", .jcb), ("3589", .jcb), ("3590", nil),
            ("6199", .maestro), ("620", .unionpay), ("62099", .unionpay), ("62183", .maestro), ("62184", .unionpay),
            ("62197", .unionpay), ("62198", .maestro), ("6220", .unionpay), ("622999", .unionpay), ("626", .unionpay),
            ("6271", .maestro), ("6290", .maestro), ("6291", .unionpay), ("6293", .maestro),
            ("627779", .unionpay), ("627780", .elo), ("627781", .unionpay), ("810", .unionpay), ("8171", .unionpay),
            ("8172", nil), ("8099", nil), ("8100", .unionpay),
            ("493697", .visa), ("493698", .maestro), ("493699", .visa),
            ("499999", .visa), ("500000", .maestro), ("504174", .maestro), ("504175", .elo), ("504176", .maestro),
            ("506098", .maestro), ("506099", .verve), ("506127", .verve), ("506128", .maestro), ("506698", .maestro),
            ("506699", .elo), ("506778", .elo), ("506779", .maestro), ("508499", .maestro), ("508500", .rupay),
            ("508999", .rupay), ("509000", .elo), ("509999", .elo),
            ("606281", .maestro), ("606282", .hipercard), ("606283", .maestro), ("606984", .maestro),
            ("606985", .rupay), ("607984", .rupay), ("607985", .maestro), ("608000", .maestro), ("608001", .rupay),
            ("608500", .rupay), ("608501", .maestro),
            ("650030", .discover), ("650031", .elo), ("650033", .elo), ("650034", .discover), ("650035", .elo),
            ("650081", .discover), ("650082", .troy), ("650083", .troy), ("650084", .discover),
            ("65083699", .discover), ("65083700", .troy), ("65083704", .troy), ("65083705", .discover),
            ("652149", .discover), ("652150", .rupay), ("653149", .rupay), ("653150", .discover),
            ("63737422", .maestro), ("63737423", .hiper), ("63737424", .maestro), ("637095", .hiper),
            ("9791", nil), ("9792", .troy), ("9793", nil),
            ("589561", .maestro), ("589562", .naranja), ("402918", .naranja), ("527572", .naranja),
            ("527571", .mastercard), ("401177", .visa), ("401178", .elo), ("401179", .elo), ("401180", .visa),
            ("0", nil), ("7", nil), ("8", nil), ("1", nil),
        ] as [(String, CardBrand?)])
    func rangeBoundaries(prefix: String, expected: CardBrand?) {
        let padded = prefix + String(repeating: "0", count: 16 - prefix.count)
        #expect(catalog.brand(forDigits: padded) == expected, "prefix \(prefix)")
    }

    /// Overlapping ranges: the longer prefix wins, and between equally long ranges the narrower one.
    @Test(arguments: [
        ("5041750000000000", CardBrand.elo),  // Elo 504175 inside Maestro 500000–506698 (split there)
        ("5066990000000000", .elo),  // Elo 506699 between two Maestro ranges
        ("6362970000000000", .elo),  // Elo 636297 inside Maestro 63
        ("4011780000000000", .elo),  // Elo 401178 inside Visa 4
        ("4029180000000000", .naranja),  // Naranja inside Visa
        ("5275720000000000", .naranja),  // Naranja inside Mastercard 51–55
        ("5061200000000000", .verve),  // Verve 506099–506127 inside Maestro 504176–506698, same length
        ("5085000000000000", .rupay),  // RuPay 508500–508999 inside Maestro 506779–508999, same length
        ("6500310000000000", .elo),  // Elo inside Discover 65
        ("6587831200000000", .discover),  // Troy 65878300–65878311 needs all eight digits
        ("6587831100000000", .troy),
        ("6011000000000000", .discover),  // Discover 6011 inside the Maestro catch-all 6
    ])
    func overlapsResolveToTheLongestThenNarrowestPrefix(number: String, expected: CardBrand) {
        #expect(catalog.brand(forDigits: number) == expected)
        #expect(referenceBrand(number) == expected)
    }

    /// The trie agrees with a plain scan of the table on every range edge and its neighbours and on random input.
    @Test func trieAgreesWithLinearScan() {
        var probes = [String]()
        for range in BrandCatalog.standardRanges {
            for value in [Int(range.low) - 1, Int(range.low), Int(range.high), Int(range.high) + 1] where value >= 0 {
                var text = String(value)
                if text.count < range.digits { text = String(repeating: "0", count: range.digits - text.count) + text }
                guard text.count == range.digits else { continue }
                for tail in ["00000000", "99999999", "45454545"] {
                    probes.append(String((text + tail).prefix(16)))
                }
            }
        }
        var generator = SplitMix64(seed: 42)
        for _ in 0..<20_000 {
            let value = generator.next() % 100_000_000
            let text = String(value)
            probes.append(String(repeating: "0", count: 8 - text.count) + text + "12345678")
        }
        var disagreements = [String]()
        for probe in probes where catalog.brand(forDigits: probe) != referenceBrand(probe) {
            disagreements.append(String(probe.prefix(8)))
        }
        #expect(disagreements.isEmpty)
        #expect(probes.count > 20_000)
    }

    /// Partial input lists every brand a number with that start could have.
    @Test(
        arguments: [
            ("", CardBrand.allCases),
            ("2", [CardBrand.mastercard, .jcb, .mir]),
            ("22", [.mastercard, .mir]),
            ("3", [.amex, .diners, .jcb]),
            ("35", [.jcb]),
            ("4", [.visa, .maestro, .elo, .naranja]),
            ("41", [.visa]),
            ("4111", [.visa]),
            ("5", [.mastercard, .maestro, .elo, .verve, .rupay, .naranja]),
            ("50", [.maestro, .elo, .verve, .rupay]),
            ("5061", [.maestro, .verve]),
            ("6", [.discover, .unionpay, .maestro, .elo, .hiper, .hipercard, .troy, .rupay]),
            ("65", [.discover, .elo, .troy, .rupay]),
            ("6011", [.discover]),
            ("9", [.troy]),
            ("8", [.unionpay]),
            ("4970 10", [.visa]),
            ("4970107111111119", [.visa]),
            ("0", []), ("7", []), ("1", [.jcb]), ("12", []), ("123", []), ("181", []), ("1802", []), ("212", []),
            ("2132", []), ("221", []), ("222099", []), ("2721", []), ("306", []), ("31", []), ("32", []), ("33", []),
            ("4x", []),
        ] as [(String, [CardBrand])])
    func partialPrefixesGiveCandidates(prefix: String, expected: [CardBrand]) {
        #expect(catalog.candidates(forPrefix: prefix) == expected)
        // A brand is decided only when it is the one candidate (and no number with this start lacks a brand).
        if let decided = catalog.brand(forDigits: prefix.filter { $0 != " " }) {
            #expect(expected == [decided])
        } else {
            #expect(expected.count != 1 || ["1", "8", "9", "35"].contains(prefix))
        }
    }

    @Test func shortInputIsDecidedOnlyWhenEveryCompletionAgrees() {
        #expect(catalog.brand(forDigits: "4111") == .visa)
        #expect(catalog.brand(forDigits: "6011") == .discover)
        #expect(catalog.brand(forDigits: "34") == .amex)
        #expect(catalog.brand(forDigits: "4") == nil)  // Elo, Naranja and Maestro rows start with 4 too
        #expect(catalog.brand(forDigits: "35") == nil)  // 3500–3527 belong to no brand
        #expect(catalog.brand(forDigits: "6500") == nil)
        #expect(catalog.brand(forDigits: "65003") == nil)
        #expect(catalog.brand(forDigits: "650031") == .elo)
    }

    /// Candidates agree with brute force: the brands of every eight-digit completion of a prefix.
    @Test func candidatesMatchEveryCompletion() {
        var generator = SplitMix64(seed: 7)
        var prefixes = ["5066", "6500", "6370", "6378", "6587", "5078", "6062", "2204", "6221", "4573"]
        for _ in 0..<20 {
            let text = String(generator.next() % 10_000)
            prefixes.append(String(repeating: "0", count: 4 - text.count) + text)
        }
        for prefix in prefixes {
            var brands = Set<CardBrand>()
            let base = UInt32(prefix)! * 10_000
            for completion in UInt32(0)..<10_000 {
                if let brand = referenceBrand(leading: base + completion) { brands.insert(brand) }
            }
            let expected = CardBrand.allCases.filter { brands.contains($0) }
            #expect(catalog.candidates(forPrefix: prefix) == expected, "prefix \(prefix)")
        }
    }

    @Test func customCatalogsUseTheirOwnTable() {
        let custom = BrandCatalog(ranges: [BrandRange(.visa, "4"), BrandRange(.elo, "41", "42"), BrandRange(.mir, "0")])
        #expect(custom.brand(forDigits: "4000000000000000") == .visa)
        #expect(custom.brand(forDigits: "4200000000000000") == .elo)
        #expect(custom.brand(forDigits: "0000000000000000") == .mir)
        #expect(custom.brand(forDigits: "5100000000000000") == nil)
        #expect(custom.candidates(forPrefix: "4") == [.visa, .elo])
        // A full tie goes to the row listed first.
        let tie = BrandCatalog(ranges: [BrandRange(.jcb, "35"), BrandRange(.amex, "35")])
        #expect(tie.brand(forDigits: "3500000000000000") == .jcb)
    }

    @Test func nonDigitsStopDetection() {
        #expect(catalog.brand(forDigits: "4x11111111111111") == nil)  // as undecided as "4"
        #expect(catalog.brand(forDigits: "4111x11111111111") == .visa)
        #expect(catalog.brand(forDigits: "x111111111111111") == nil)
        #expect(catalog.brand(forDigits: "") == nil)
    }

    @Test(arguments: [
        (CardBrand.visa, "CVV", 3), (.mastercard, "CVC", 3), (.amex, "CID", 4), (.discover, "CID", 3),
        (.diners, "CVV", 3), (.jcb, "CVV", 3), (.unionpay, "CVN", 3), (.maestro, "CVC", 3), (.mir, "CVP2", 3),
        (.elo, "CVE", 3), (.hiper, "CVC", 3), (.hipercard, "CVC", 3), (.troy, "CVV", 3), (.verve, "CVV", 3),
        (.rupay, "CVV", 3), (.naranja, "CVV", 3),
    ])
    func securityCodeNamesAndSizes(brand: CardBrand, name: String, size: Int) {
        #expect(brand.securityCode == SecurityCodeSpec(name: name, size: size))
    }

    @Test(arguments: [
        (CardBrand.visa, [16, 18, 19]), (.mastercard, [16]), (.amex, [15]), (.discover, [16, 19]),
        (.diners, [14, 16, 19]), (.jcb, [16, 17, 18, 19]), (.unionpay, Array(14...19)), (.maestro, Array(12...19)),
        (.mir, Array(16...19)), (.elo, [16]), (.verve, [16, 18, 19]), (.rupay, [16]),
    ])
    func lengthsPerBrand(brand: CardBrand, lengths: [Int]) {
        #expect(Array(brand.lengths) == lengths)
        for length in 0...25 {
            #expect(brand.acceptsLength(length) == lengths.contains(length))
        }
    }

    @Test func brandIdentifiersAreStable() {
        #expect(
            CardBrand.allCases.map(\.id) == [
                "visa", "mastercard", "amex", "discover", "diners", "jcb", "unionpay", "maestro", "mir", "elo", "hiper",
                "hipercard", "troy", "verve", "rupay", "naranja",
            ])
        #expect(CardBrand.amex.displayName == "American Express")
    }
}

/// A small deterministic generator for test inputs.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
