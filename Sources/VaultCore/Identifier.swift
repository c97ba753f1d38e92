/// Resource identifiers and random secrets, and the composite record ids that keep one client's records apart
/// from another's in the store.
public enum Identifier {
    private static let base32: [UInt8] = Array("0123456789abcdefghjkmnpqrstvwxyz".utf8)
    private static let alphanumerics: [UInt8] = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)

    /// A new resource id: `prefix` + 26 lowercase base-32 characters (130 random bits), e.g. `card_4x…`.
    public static func make(_ prefix: String, random: any RandomSource) -> String {
        var bytes = random.bytes(count: 26)
        defer { bytes.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        let suffix = String(unsafeUninitializedCapacity: 26) { out in
            for index in 0..<26 { out[index] = base32[Int(bytes[index] & 31)] }
            return 26
        }
        return prefix + suffix
    }

    /// A random secret of `count` characters from A–Z, a–z and 0–9 (about 5.95 bits each), drawn without bias.
    public static func secret(count: Int, random: any RandomSource) -> String {
        var result = [UInt8]()
        result.reserveCapacity(count)
        while result.count < count {
            let bytes = random.bytes(count: count)
            for byte in bytes where byte < 248 && result.count < count {  // 248 = 4 × 62: no modulo bias
                result.append(alphanumerics[Int(byte % 62)])
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// True when `id` may name a resource: 1–100 characters of A–Z, a–z, 0–9, `_` and `-`.
    public static func isWellFormed(_ id: String) -> Bool {
        let bytes = id.utf8
        return !bytes.isEmpty && bytes.count <= 100 && bytes.allSatisfy(isIdentifierByte)
    }

    package static func isIdentifierByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            || byte == 0x5F || byte == 0x2D
    }

    /// The store record id of a client's resource: `clientId:resourceId`.
    package static func scoped(_ clientId: String, _ resourceId: String) -> String { clientId + ":" + resourceId }

    /// The store record id of an index entry: `clientId:key:resourceId`.
    package static func indexed(_ clientId: String, _ key: String, _ resourceId: String) -> String {
        clientId + ":" + key + ":" + resourceId
    }

    /// `id` as it may appear in an error text: kept when well formed, otherwise cut short and cleaned, so an
    /// error can never echo a card number pasted into a path.
    package static func printable(_ id: String) -> String {
        if isWellFormed(id), !containsLongDigitRun(id) { return id }
        return "(invalid)"
    }

    private static func containsLongDigitRun(_ text: String) -> Bool {
        var run = 0
        for byte in text.utf8 {
            if byte >= 0x30 && byte <= 0x39 {
                run += 1
                if run >= 12 { return true }
            } else {
                run = 0
            }
        }
        return false
    }

    /// Lowercase hexadecimal text of `bytes`.
    package static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
