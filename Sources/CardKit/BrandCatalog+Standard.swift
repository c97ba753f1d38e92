extension BrandCatalog {
    /// The catalog of every brand CardKit knows, built from ``standardRanges``.
    public static let standard = BrandCatalog(ranges: standardRanges)

    /// The brand range table: one row per range, prefixes compared on their own number of digits.
    ///
    /// Sources (facts, not code):
    /// - braintree/credit-card-type v10.3.0 `src/lib/card-types.ts` (`patterns`) for visa, mastercard, amex,
    ///   diners, discover, jcb, unionpay, maestro, elo, mir, hiper, hipercard, verve, naranja and the Troy rows
    ///   below; its README "Pattern Detection" for the longest-match rule. The Troy table there has 55 rows; only
    ///   9792 and the rows quoted in the reference notes are listed here.
    /// - Mastercard 2-series 2221–2720 and 51–55: the same table (its 2221–2229, 223–229, 23–26, 270–271, 2720
    ///   rows written as one range).
    /// - RuPay (not in braintree): https://en.wikipedia.org/wiki/Payment_card_number lists 60, 65, 81, 82, 508
    ///   (plus 353/356 co-branded with JCB, left to JCB); those broad prefixes collide with Discover, UnionPay and
    ///   Maestro, so the commonly used finer ranges 508500–508999, 606985–607984, 608001–608500, 652150–653149 are
    ///   used (thanushiyay/CardValidation_SPAK `src/components/CardTypes.js`; low authority).
    /// Collected in /work/shared/reference/vaults-pci-brands.md, section 5.
    public static let standardRanges: [BrandRange] = [
        // Visa
        BrandRange(.visa, "4"),
        // Mastercard
        BrandRange(.mastercard, "51", "55"),
        BrandRange(.mastercard, "2221", "2720"),
        // American Express
        BrandRange(.amex, "34"),
        BrandRange(.amex, "37"),
        // Diners Club
        BrandRange(.diners, "300", "305"),
        BrandRange(.diners, "36"),
        BrandRange(.diners, "38"),
        BrandRange(.diners, "39"),
        // Discover
        BrandRange(.discover, "6011"),
        BrandRange(.discover, "644", "649"),
        BrandRange(.discover, "65"),
        // JCB
        BrandRange(.jcb, "2131"),
        BrandRange(.jcb, "1800"),
        BrandRange(.jcb, "3528", "3589"),
        // UnionPay
        BrandRange(.unionpay, "620"),
        BrandRange(.unionpay, "62100", "62182"),
        BrandRange(.unionpay, "62184", "62197"),
        BrandRange(.unionpay, "62200", "62205"),
        BrandRange(.unionpay, "622010", "622999"),
        BrandRange(.unionpay, "62207", "62209"),
        BrandRange(.unionpay, "623", "626"),
        BrandRange(.unionpay, "6270"),
        BrandRange(.unionpay, "6272"),
        BrandRange(.unionpay, "6276"),
        BrandRange(.unionpay, "627700", "627779"),
        BrandRange(.unionpay, "627781", "627799"),
        BrandRange(.unionpay, "6282", "6289"),
        BrandRange(.unionpay, "6291"),
        BrandRange(.unionpay, "6292"),
        BrandRange(.unionpay, "810"),
        BrandRange(.unionpay, "8110", "8171"),
        // Maestro (the catch-all 6 loses to every longer 6x range above and below)
        BrandRange(.maestro, "493698"),
        BrandRange(.maestro, "500000", "504174"),
        BrandRange(.maestro, "504176", "506698"),
        BrandRange(.maestro, "506779", "508999"),
        BrandRange(.maestro, "56", "59"),
        BrandRange(.maestro, "63"),
        BrandRange(.maestro, "67"),
        BrandRange(.maestro, "6"),
        // Elo
        BrandRange(.elo, "401178", "401179"),
        BrandRange(.elo, "431274"),
        BrandRange(.elo, "438935"),
        BrandRange(.elo, "451416"),
        BrandRange(.elo, "457393"),
        BrandRange(.elo, "457631", "457632"),
        BrandRange(.elo, "504175"),
        BrandRange(.elo, "506699", "506778"),
        BrandRange(.elo, "509000", "509999"),
        BrandRange(.elo, "627780"),
        BrandRange(.elo, "636297"),
        BrandRange(.elo, "636368"),
        BrandRange(.elo, "650031", "650033"),
        BrandRange(.elo, "650035", "650051"),
        BrandRange(.elo, "650405", "650439"),
        BrandRange(.elo, "650485", "650538"),
        BrandRange(.elo, "650541", "650598"),
        BrandRange(.elo, "650700", "650718"),
        BrandRange(.elo, "650720", "650727"),
        BrandRange(.elo, "650901", "650978"),
        BrandRange(.elo, "651652", "651679"),
        BrandRange(.elo, "655000", "655019"),
        BrandRange(.elo, "655021", "655058"),
        // Mir
        BrandRange(.mir, "2200", "2204"),
        // Hiper
        BrandRange(.hiper, "637095"),
        BrandRange(.hiper, "63737423"),
        BrandRange(.hiper, "63743358"),
        BrandRange(.hiper, "637568"),
        BrandRange(.hiper, "637599"),
        BrandRange(.hiper, "637609"),
        BrandRange(.hiper, "637612"),
        // Hipercard
        BrandRange(.hipercard, "606282"),
        // Troy
        BrandRange(.troy, "9792"),
        BrandRange(.troy, "650082", "650083"),
        BrandRange(.troy, "650456", "650457"),
        BrandRange(.troy, "65083700", "65083704"),
        BrandRange(.troy, "65878300", "65878311"),
        BrandRange(.troy, "65880900"),
        // Verve
        BrandRange(.verve, "506099", "506127"),
        BrandRange(.verve, "506129"),
        BrandRange(.verve, "506133", "506150"),
        BrandRange(.verve, "506158", "506163"),
        BrandRange(.verve, "506166"),
        BrandRange(.verve, "506168"),
        BrandRange(.verve, "506170"),
        BrandRange(.verve, "506173"),
        BrandRange(.verve, "506176", "506180"),
        BrandRange(.verve, "506184"),
        BrandRange(.verve, "506187", "506188"),
        BrandRange(.verve, "506191"),
        BrandRange(.verve, "506195"),
        BrandRange(.verve, "506197"),
        BrandRange(.verve, "507865", "507866"),
        BrandRange(.verve, "507868", "507877"),
        BrandRange(.verve, "507880", "507888"),
        BrandRange(.verve, "507900"),
        BrandRange(.verve, "507941"),
        // RuPay
        BrandRange(.rupay, "508500", "508999"),
        BrandRange(.rupay, "606985", "607984"),
        BrandRange(.rupay, "608001", "608500"),
        BrandRange(.rupay, "652150", "653149"),
        // Naranja
        BrandRange(.naranja, "589562"),
        BrandRange(.naranja, "402918"),
        BrandRange(.naranja, "527572"),
    ]
}
