import VaultCore

/// Random identifiers of the hosted checkout: transaction, pairing and address ids, and page secrets.
enum CheckoutIdentifiers {
    private static let base32: [UInt8] = Array("0123456789abcdefghjkmnpqrstvwxyz".utf8)
    private static let alphanumerics: [UInt8] = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)

    /// `prefix` + 26 lower-case base-32 characters (130 random bits).
    static func make(_ prefix: String, random: any RandomSource) -> String {
        let bytes = random.bytes(count: 26)
        return prefix + String(decoding: bytes.map { base32[Int($0 & 31)] }, as: UTF8.self)
    }

    /// `count` characters of A–Z, a–z, 0–9, drawn without modulo bias.
    static func secret(count: Int, random: any RandomSource) -> String {
        var result = [UInt8]()
        result.reserveCapacity(count)
        while result.count < count {
            for byte in random.bytes(count: count) where byte < 248 && result.count < count {
                result.append(alphanumerics[Int(byte % 62)])
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// True when `text` has the shape of ``secret(count:random:)`` with 32 characters.
    static func isSecret(_ text: String) -> Bool {
        text.utf8.count == 32
            && text.utf8.allSatisfy { CheckoutCallbackURL.isAlpha($0) || CheckoutCallbackURL.isDigit($0) }
    }

    /// True when `text` may be an id this module generated or a merchant's id: 1–100 of A–Z, a–z, 0–9, `_`,
    /// `-`.
    static func isWellFormed(_ text: String) -> Bool {
        let bytes = text.utf8
        return !bytes.isEmpty && bytes.count <= 100
            && bytes.allSatisfy {
                CheckoutCallbackURL.isAlpha($0) || CheckoutCallbackURL.isDigit($0) || $0 == 0x5F || $0 == 0x2D
            }
    }
}
