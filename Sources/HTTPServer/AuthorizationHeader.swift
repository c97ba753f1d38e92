/// The `Authorization` request header (RFC 9110 §11.6.2): `<scheme> <credentials>`, the scheme case-insensitive.
public enum AuthorizationHeader {
    /// The credentials of `value` when its scheme is `scheme` (ASCII letters, compared without case), with the
    /// spaces and tabs around them dropped; nil for another scheme or for no credentials.
    ///
    /// Works on the header's bytes: every authenticated request goes through here, and Foundation's
    /// `trimmingCharacters(in:)` (through `NSString`) cost about 27k instructions a request.
    public static func credentials(_ value: String, scheme: String) -> String? {
        let bytes = value.utf8
        var index = bytes.startIndex
        for expected in scheme.utf8 {
            guard index != bytes.endIndex, lowercased(bytes[index]) == lowercased(expected) else { return nil }
            index = bytes.index(after: index)
        }
        guard index != bytes.endIndex, isBlank(bytes[index]) else { return nil }
        while index != bytes.endIndex, isBlank(bytes[index]) { index = bytes.index(after: index) }
        var end = bytes.endIndex
        while end > index, isBlank(bytes[bytes.index(before: end)]) { end = bytes.index(before: end) }
        guard index < end else { return nil }
        return String(decoding: bytes[index..<end], as: UTF8.self)
    }

    @inline(__always)
    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    @inline(__always)
    private static func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
}
