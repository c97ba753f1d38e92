import VaultCore

/// A JSON value with its exact type kept (`1` is not `true`), objects in key order. The Mangopay routes parse
/// request bodies into it (to name every wrongly typed field, as the real API does) and render responses from it
/// (to write `null` fields explicitly and keep Mangopay's field order).
public enum MangopayJSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([MangopayJSON])
    case object([(String, MangopayJSON)])

    public static func == (lhs: MangopayJSON, rhs: MangopayJSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.int(let a), .int(let b)): a == b
        case (.double(let a), .double(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// A string or null.
    static func text(_ value: String?) -> MangopayJSON { value.map { .string($0) } ?? .null }
    /// An integer or null.
    static func integer(_ value: Int64?) -> MangopayJSON { value.map { .int($0) } ?? .null }

    /// The value for `key` of an object (the last one when repeated).
    subscript(key: String) -> MangopayJSON? {
        guard case .object(let members) = self else { return nil }
        return members.last { $0.0 == key }?.1
    }

    // MARK: Rendering

    /// The compact JSON text.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// The compact JSON text as UTF-8 bytes, rendered straight into a byte buffer (no `String` appends).
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        render(into: &out)
        return out
    }

    func render(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])  // null
        case .bool(let value):
            if value {
                out.append(contentsOf: [0x74, 0x72, 0x75, 0x65])
            } else {
                out.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65])
            }
        case .int(let value): JSONText.appendInteger(value, to: &out)
        case .double(let value):
            if value.isFinite {
                out.append(contentsOf: String(value).utf8)
            } else {
                out.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
            }
        case .string(let value): JSONText.appendString(value, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                item.render(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONText.appendString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                value.render(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    // MARK: Parsing

    /// Why a body is not JSON (the position only; never the text).
    public struct ParseError: Error, Equatable {
        public var offset: Int
    }

    /// Parses JSON text (RFC 8259): one value, optional surrounding whitespace, nesting at most 64 deep.
    public static func parse(_ bytes: [UInt8]) throws(ParseError) -> MangopayJSON {
        var parser = Parser(bytes: bytes)
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.position == bytes.count else { throw ParseError(offset: parser.position) }
        return value
    }

    private struct Parser {
        let bytes: [UInt8]
        var position = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        var error: ParseError { ParseError(offset: position) }

        mutating func skipWhitespace() {
            while position < bytes.count {
                let byte = bytes[position]
                guard byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D else { return }
                position += 1
            }
        }

        mutating func expect(_ literal: String, _ value: MangopayJSON) throws(ParseError) -> MangopayJSON {
            for byte in literal.utf8 {
                guard position < bytes.count, bytes[position] == byte else { throw error }
                position += 1
            }
            return value
        }

        mutating func value(depth: Int) throws(ParseError) -> MangopayJSON {
            guard depth < 64, position < bytes.count else { throw error }
            switch bytes[position] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): return try expect("true", .bool(true))
            case UInt8(ascii: "f"): return try expect("false", .bool(false))
            case UInt8(ascii: "n"): return try expect("null", .null)
            default: return try number()
            }
        }

        mutating func object(depth: Int) throws(ParseError) -> MangopayJSON {
            position += 1
            var members: [(String, MangopayJSON)] = []
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                position += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw error }
                let key = try string()
                skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw error }
                position += 1
                skipWhitespace()
                members.append((key, try value(depth: depth + 1)))
                skipWhitespace()
                guard position < bytes.count else { throw error }
                if bytes[position] == UInt8(ascii: ",") {
                    position += 1
                } else if bytes[position] == UInt8(ascii: "}") {
                    position += 1
                    return .object(members)
                } else {
                    throw error
                }
            }
        }

        mutating func array(depth: Int) throws(ParseError) -> MangopayJSON {
            position += 1
            var items: [MangopayJSON] = []
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                position += 1
                return .array(items)
            }
            while true {
                skipWhitespace()
                items.append(try value(depth: depth + 1))
                skipWhitespace()
                guard position < bytes.count else { throw error }
                if bytes[position] == UInt8(ascii: ",") {
                    position += 1
                } else if bytes[position] == UInt8(ascii: "]") {
                    position += 1
                    return .array(items)
                } else {
                    throw error
                }
            }
        }

        mutating func hex4() throws(ParseError) -> UInt32 {
            guard position + 4 <= bytes.count else { throw error }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[position]
                let digit: UInt8
                switch byte {
                case 0x30...0x39: digit = byte - 0x30
                case 0x41...0x46: digit = byte - 0x41 + 10
                case 0x61...0x66: digit = byte - 0x61 + 10
                default: throw error
                }
                value = value << 4 | UInt32(digit)
                position += 1
            }
            return value
        }

        mutating func string() throws(ParseError) -> String {
            position += 1
            let start = position
            // Most strings hold no escape: their text is then the bytes between the quotes, taken in one copy.
            var ascii = true
            while position < bytes.count {
                let byte = bytes[position]
                if byte == UInt8(ascii: "\"") {
                    position += 1
                    return try text(bytes[start..<position - 1], ascii: ascii)
                }
                if byte == UInt8(ascii: "\\") { break }
                position += 1
                if byte < 0x20 { throw error }
                if byte >= 0x80 { ascii = false }
            }
            var out: [UInt8] = []
            out.reserveCapacity(position - start + 16)
            out.append(contentsOf: bytes[start..<position])
            while true {
                guard position < bytes.count else { throw error }
                let byte = bytes[position]
                position += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return try text(out[...], ascii: false)
                case UInt8(ascii: "\\"):
                    guard position < bytes.count else { throw error }
                    let escape = bytes[position]
                    position += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800..<0xDC00).contains(scalar) {
                            guard position + 2 <= bytes.count, bytes[position] == UInt8(ascii: "\\"),
                                bytes[position + 1] == UInt8(ascii: "u")
                            else { throw error }
                            position += 2
                            let low = try hex4()
                            guard (0xDC00..<0xE000).contains(low) else { throw error }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        } else if (0xDC00..<0xE000).contains(scalar) {
                            throw error
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { throw error }
                        out.append(contentsOf: Array(String(Character(unicode)).utf8))
                    default: throw error
                    }
                case 0x00..<0x20:
                    throw error
                default:
                    out.append(byte)
                }
            }
        }

        /// The string of UTF-8 `bytes`; ASCII needs no validation (and takes `String`'s fast path).
        func text(_ bytes: ArraySlice<UInt8>, ascii: Bool) throws(ParseError) -> String {
            if ascii { return bytes.withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) } }
            guard let text = String(validating: bytes, as: UTF8.self) else { throw error }
            return text
        }

        mutating func number() throws(ParseError) -> MangopayJSON {
            let start = position
            if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
            func digits() -> Int {
                let begin = position
                while position < bytes.count, bytes[position] >= 0x30, bytes[position] <= 0x39 { position += 1 }
                return position - begin
            }
            let integerDigits = digits()
            guard integerDigits > 0 else { throw error }
            if integerDigits > 1, bytes[position - integerDigits] == 0x30 { throw error }
            var isInteger = true
            if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
                position += 1
                isInteger = false
                guard digits() > 0 else { throw error }
            }
            if position < bytes.count, bytes[position] | 0x20 == UInt8(ascii: "e") {
                position += 1
                isInteger = false
                if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-")
                {
                    position += 1
                }
                guard digits() > 0 else { throw error }
            }
            let text = String(decoding: bytes[start..<position], as: UTF8.self)
            if isInteger, let value = Int64(text) { return .int(value) }
            guard let value = Double(text), value.isFinite else { throw error }
            return .double(value)
        }
    }
}
