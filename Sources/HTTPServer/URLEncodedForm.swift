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
        let parsed = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(HTTPError) in try parse(buffer: buffer) }
        }
        if let parsed { return try parsed.get() }
        return try Array(bytes).withUnsafeBufferPointer { buffer in
            Result { () throws(HTTPError) in try parse(buffer: buffer) }
        }.get()
    }

    /// Parses form text.
    public static func parse(_ text: String) throws(HTTPError) -> FormFields {
        var text = text
        return try text.withUTF8 { buffer in Result { () throws(HTTPError) in try parse(buffer: buffer) } }.get()
    }

    /// Splits at `&`, then each pair at its first `=`; a name or value is made into a string straight from the
    /// buffer when it holds no escape (no copy of card data on the way).
    private static func parse(buffer: UnsafeBufferPointer<UInt8>) throws(HTTPError) -> FormFields {
        var pairs: [(name: String, value: String)] = []
        let end = buffer.count
        var start = 0
        while start <= end {
            var stop = start
            while stop < end && buffer[stop] != UInt8(ascii: "&") { stop += 1 }
            if stop > start {
                var equals = start
                while equals < stop && buffer[equals] != UInt8(ascii: "=") { equals += 1 }
                let name = try decode(UnsafeBufferPointer(rebasing: buffer[start..<equals]))
                let value =
                    equals < stop ? try decode(UnsafeBufferPointer(rebasing: buffer[(equals + 1)..<stop])) : ""
                pairs.append((name, value))
            }
            start = stop + 1
        }
        return FormFields(pairs)
    }

    /// Decodes `+` and `%XX` escapes and checks UTF-8.
    static func decode(_ bytes: [UInt8]) throws(HTTPError) -> String {
        try bytes.withUnsafeBufferPointer { buffer in Result { () throws(HTTPError) in try decode(buffer) } }.get()
    }

    /// Decodes `+` and `%XX` escapes and checks UTF-8; escaped text is decoded in a temporary buffer that is wiped
    /// after (it may be a card number).
    private static func decode(_ bytes: UnsafeBufferPointer<UInt8>) throws(HTTPError) -> String {
        guard bytes.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }) else {
            return try utf8(bytes)
        }
        return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: bytes.count) { out in
            defer { UnsafeMutableRawBufferPointer(out).initializeMemory(as: UInt8.self, repeating: 0) }
            return Result { () throws(HTTPError) in
                var count = 0
                var index = 0
                while index < bytes.count {
                    let byte = bytes[index]
                    if byte == UInt8(ascii: "+") {
                        out[count] = 0x20
                        index += 1
                    } else if byte == UInt8(ascii: "%") {
                        guard index + 2 < bytes.count, let high = hexValue(bytes[index + 1]),
                            let low = hexValue(bytes[index + 2])
                        else { throw HTTPError.badRequest("Malformed percent-encoding in form data") }
                        out[count] = high << 4 | low
                        index += 3
                    } else {
                        out[count] = byte
                        index += 1
                    }
                    count += 1
                }
                return try utf8(UnsafeBufferPointer(rebasing: out[0..<count]))
            }
        }.get()
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
        try bytes.withUnsafeBufferPointer { buffer in Result { () throws(HTTPError) in try utf8(buffer) } }.get()
    }

    private static func utf8(_ bytes: UnsafeBufferPointer<UInt8>) throws(HTTPError) -> String {
        // ASCII (every field of a tokenization form) is valid UTF-8 as it is.
        if bytes.allSatisfy({ $0 < 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
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
