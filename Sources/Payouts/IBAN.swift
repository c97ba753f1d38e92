/// International Bank Account Numbers (ISO 13616): the country's length and the mod-97 check digits.
public enum IBAN {
    /// Why an IBAN is refused; the texts never repeat the number.
    public enum Problem: Error, Equatable, Sendable {
        case characters
        case country
        case length(expected: Int)
        case checkDigits

        public var message: String {
            switch self {
            case .characters: "The IBAN must be letters and digits only (spaces are ignored)."
            case .country: "The IBAN's country is not one whose accounts have an IBAN."
            case .length(let expected): "The IBAN of this country has \(expected) characters."
            case .checkDigits: "The IBAN's check digits are wrong (ISO 13616 mod-97)."
            }
        }
    }

    /// `text` without spaces and in upper case, when it is a valid IBAN.
    /// - Throws: ``Problem`` naming the first rule broken.
    public static func normalized(_ text: String) throws(Problem) -> String {
        let bytes = Array(text.utf8.filter { $0 != 0x20 }.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 })
        guard bytes.count >= 4, bytes.allSatisfy({ isDigit($0) || isLetter($0) }) else { throw .characters }
        guard isLetter(bytes[0]), isLetter(bytes[1]), isDigit(bytes[2]), isDigit(bytes[3]) else { throw .characters }
        let country = String(decoding: bytes[0..<2], as: UTF8.self)
        guard let length = lengths[country] else { throw .country }
        guard bytes.count == length else { throw .length(expected: length) }
        guard remainder(bytes[4...] + bytes[0..<4]) == 1 else { throw .checkDigits }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `iban` as logs and lists may show it: the country and the last four characters.
    public static func masked(_ iban: String) -> String {
        guard iban.utf8.count > 8 else { return "****" }
        return String(iban.prefix(2)) + "**…" + String(iban.suffix(4))
    }

    /// The remainder mod 97 of the number whose digits are `bytes`, each letter read as two digits (A = 10).
    static func remainder(_ bytes: some Sequence<UInt8>) -> Int {
        var value = 0
        for byte in bytes {
            if isDigit(byte) {
                value = (value * 10 + Int(byte - 0x30)) % 97
            } else {
                value = (value * 100 + Int(byte - 0x41 + 10)) % 97
            }
        }
        return value
    }

    static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
    static func isLetter(_ byte: UInt8) -> Bool { byte >= 0x41 && byte <= 0x5A }

    /// The IBAN length of each country of the ISO 13616 registry (SWIFT's IBAN Registry).
    static let lengths: [String: Int] = {
        var table: [String: Int] = [:]
        let text = """
            AD24 AE23 AL28 AT20 AZ28 BA20 BE16 BG22 BH22 BI27 BR29 BY28 CH21 CR22 CY28 CZ24 DE22 DJ27 DK18 DO28 EE20 \
            EG29 ES24 FI18 FK18 FO18 FR27 GB22 GE22 GI23 GL18 GR27 GT28 HR21 HU28 IE22 IL23 IQ23 IS26 IT27 JO30 KW30 \
            KZ20 LB28 LC32 LI21 LT20 LU20 LV21 LY25 MC27 MD24 ME22 MK19 MN20 MR27 MT31 MU30 NI28 NL18 NO15 OM23 PK24 \
            PL28 PS29 PT25 QA29 RO24 RS22 RU33 SA24 SC31 SD18 SE24 SI19 SK24 SM27 SO23 ST25 SV28 TL23 TN24 TR26 UA29 \
            VA22 VG24 XK20
            """
        for entry in text.split(separator: " ") {
            table[String(entry.prefix(2))] = Int(entry.dropFirst(2))
        }
        return table
    }()
}

/// Business Identifier Codes (ISO 9362): 4 letters (the bank), 2 letters (the country), 2 letters or digits
/// (the location) and an optional branch of 3 letters or digits.
public enum BIC {
    /// True when `text` has the BIC's shape and an assigned country.
    public static func isValid(_ text: String, isCountry: (String) -> Bool) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 8 || bytes.count == 11 else { return false }
        let alphanumeric = { (byte: UInt8) in IBAN.isLetter(byte) || IBAN.isDigit(byte) }
        return bytes[0..<6].allSatisfy(IBAN.isLetter) && bytes[6...].allSatisfy(alphanumeric)
            && isCountry(String(decoding: bytes[4..<6], as: UTF8.self))
    }
}
