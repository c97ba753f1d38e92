/// Name/value pairs from a query string or an `application/x-www-form-urlencoded` body.
///
/// Printing it shows the names only: values may be card data.
public struct FormFields: Sendable, Sequence, CustomStringConvertible, CustomReflectable {
    public private(set) var pairs: [(name: String, value: String)]

    public init(_ pairs: [(name: String, value: String)] = []) { self.pairs = pairs }

    /// The first value for `name`, if present.
    public subscript(name: String) -> String? {
        for pair in pairs where pair.name == name { return pair.value }
        return nil
    }

    /// Every value for `name`, in order.
    public func values(_ name: String) -> [String] { pairs.filter { $0.name == name }.map(\.value) }

    public var isEmpty: Bool { pairs.isEmpty }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { pairs.makeIterator() }

    public var description: String { "FormFields(" + pairs.map(\.name).joined(separator: ", ") + ")" }

    public var customMirror: Mirror {
        Mirror(self, children: ["names": pairs.map(\.name)], displayStyle: .struct)
    }
}

/// Parses `application/x-www-form-urlencoded` text (WHATWG URL standard): `&`-separated
/// `name=value` pairs, `+` for space, `%XX` escapes, UTF-8.
public enum URLEncodedForm {
    /// Parses `bytes`; whatever the request's content type said.
    ///
    /// - Throws: ``HTTPError`` 400 for a malformed `%` escape or text that is not UTF-8.
    public static func parse(_ bytes: some Collection<UInt8>) throws(HTTPError) -> FormFields {
        var pairs: [(name: String, value: String)] = []
        var name: [UInt8] = []
        var value: [UInt8] = []
        var inValue = false

        func flush() throws(HTTPError) {
            defer {
                name.removeAll(keepingCapacity: true)
                value.removeAll(keepingCapacity: true)
                inValue = false
            }
            if name.isEmpty && value.isEmpty && !inValue { return }
            pairs.append((try decode(name), try decode(value)))
        }

        for byte in bytes {
            switch byte {
            case UInt8(ascii: "&"):
                try flush()
            case UInt8(ascii: "=") where !inValue:
                inValue = true
            default:
                if inValue { value.append(byte) } else { name.append(byte) }
            }
        }
        try flush()
        return FormFields(pairs)
    }

    /// Parses form text.
    public static func parse(_ text: String) throws(HTTPError) -> FormFields {
        try parse(Array(text.utf8))
    }

    /// Decodes `+` and `%XX` escapes and checks UTF-8.
    static func decode(_ bytes: [UInt8]) throws(HTTPError) -> String {
        guard bytes.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }) else {
            return try utf8(bytes)
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "+") {
                out.append(0x20)
                index += 1
            } else if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, let high = hexValue(bytes[index + 1]),
                    let low = hexValue(bytes[index + 2])
                else { throw HTTPError.badRequest("Malformed percent-encoding in form data") }
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(byte)
                index += 1
            }
        }
        return try utf8(out)
    }

    /// Decodes `%XX` escapes only (a path segment: `+` stays `+`).
    public static func percentDecode(_ text: Substring) throws(HTTPError) -> String {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return String(text) }
        var out: [UInt8] = []
        let bytes = Array(text.utf8)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, let high = hexValue(bytes[index + 1]),
                    let low = hexValue(bytes[index + 2])
                else { throw HTTPError.badRequest("Malformed percent-encoding in the path") }
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return try utf8(out)
    }

    private static func utf8(_ bytes: [UInt8]) throws(HTTPError) -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw HTTPError.badRequest("Form data is not valid UTF-8")
        }
        return text
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }
}
