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
    /// The characters are written straight into the string, and the random bytes are drawn into a stack buffer (a
    /// heap one past 256) that is wiped after: no copy of the secret is left behind.
    public static func secret(count: Int, random: any RandomSource) -> String {
        guard count > 0 else { return "" }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { draw in
            let raw = UnsafeMutableRawBufferPointer(draw)
            defer { raw.initializeMemory(as: UInt8.self, repeating: 0) }
            return String(unsafeUninitializedCapacity: count) { out in
                alphanumerics.withUnsafeBufferPointer { characters in
                    var written = 0
                    while written < count {
                        random.fill(raw)
                        for byte in raw where byte < 248 && written < count {  // 248 = 4 × 62: no modulo bias
                            out[written] = characters[Int(byte % 62)]
                            written += 1
                        }
                    }
                }
                return count
            }
        }
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
    @inlinable
    package static func hex(_ bytes: some Collection<UInt8>) -> String {
        let count = bytes.count
        guard count > 0 else { return "" }
        return String(unsafeUninitializedCapacity: 2 * count) { out in
            var index = 0
            for byte in bytes {
                out[index] = hexDigit(byte >> 4)
                out[index + 1] = hexDigit(byte & 15)
                index += 2
            }
            return index
        }
    }

    @inlinable
    package static func hexDigit(_ value: UInt8) -> UInt8 { value < 10 ? 0x30 + value : 0x57 + value }
}
