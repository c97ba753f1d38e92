/// The binary format of stored records: compact, versioned and field-tagged, written by hand per record type.
///
/// A value starts with a three-byte header: ``marker`` (0xB7, which no JSON text starts with, so JSON records
/// written before this format keep opening), the format ``version`` (1), and the record type's kind byte (a
/// record decoded as another type is refused, not misread). Then come fields, in any order, until the end:
/// each is a varint key `tag << 3 | wire` and its payload, where wire 0 is a varint (unsigned; signed
/// integers zigzag-encoded, booleans 0/1) and wire 2 is a varint length and that many bytes (strings in
/// UTF-8, byte strings, nested field lists, map entries). A reader skips every tag it does not know, so a newer
/// build can add fields and an older one still reads the record; a field that is absent takes its default
/// (nil for optionals); a required one missing is an error. Tags are never reused for another meaning.
public enum BinaryRecordFormat {
    public static let marker: UInt8 = 0xB7
    public static let version: UInt8 = 1
    public static let headerSize = 3

    public static let varint: UInt8 = 0
    public static let lengthDelimited: UInt8 = 2
}

/// A value with a field list in the binary format (a stored record, or a part nested in one).
public protocol BinaryFields: SendableMetatype {
    /// Writes the fields.
    func encode(to writer: inout BinaryRecordWriter)
    /// Reads the fields; `reader` holds this value's fields only.
    init(from reader: inout BinaryRecordReader) throws
}

/// A record type stored in the binary format. Codable stays for the JSON records of earlier builds.
public protocol BinaryRecord: BinaryFields, Codable {
    /// The kind byte of the header, unique per record type (see `RecordKind`).
    static var recordKind: UInt8 { get }
}

/// A damaged or foreign binary record (messages never hold values).
public struct BinaryRecordError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Appends fields to a byte buffer.
public struct BinaryRecordWriter {
    public var bytes: [UInt8]

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    @inline(__always)
    public mutating func appendVarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    @inline(__always)
    public mutating func key(_ tag: Int, _ wire: UInt8) {
        appendVarint(UInt64(tag) << 3 | UInt64(wire))
    }

    public mutating func unsigned(_ tag: Int, _ value: UInt64) {
        key(tag, BinaryRecordFormat.varint)
        appendVarint(value)
    }

    public mutating func int(_ tag: Int, _ value: Int64) {
        key(tag, BinaryRecordFormat.varint)
        appendVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    public mutating func int(_ tag: Int, _ value: Int) { int(tag, Int64(value)) }

    public mutating func int(_ tag: Int, _ value: Int64?) { if let value { int(tag, value) } }

    public mutating func int(_ tag: Int, _ value: Int?) { if let value { int(tag, Int64(value)) } }

    public mutating func bool(_ tag: Int, _ value: Bool) { unsigned(tag, value ? 1 : 0) }

    public mutating func bool(_ tag: Int, _ value: Bool?) { if let value { bool(tag, value) } }

    public mutating func string(_ tag: Int, _ value: String) {
        key(tag, BinaryRecordFormat.lengthDelimited)
        var value = value
        value.withUTF8 { utf8 in
            appendVarint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    public mutating func string(_ tag: Int, _ value: String?) { if let value { string(tag, value) } }

    public mutating func bytes(_ tag: Int, _ value: [UInt8]) {
        key(tag, BinaryRecordFormat.lengthDelimited)
        appendVarint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// A nested field list: `body` writes its fields after a length that is filled in afterwards.
    public mutating func nested(_ tag: Int, _ body: (inout BinaryRecordWriter) -> Void) {
        key(tag, BinaryRecordFormat.lengthDelimited)
        // One byte of length is reserved; a longer body moves up by the extra length bytes.
        let lengthAt = bytes.count
        bytes.append(0)
        body(&self)
        let length = bytes.count - lengthAt - 1
        if length < 0x80 {
            bytes[lengthAt] = UInt8(length)
        } else {
            var prefix: [UInt8] = []
            var value = UInt64(length)
            while value >= 0x80 {
                prefix.append(UInt8(truncatingIfNeeded: value) | 0x80)
                value >>= 7
            }
            prefix.append(UInt8(value))
            bytes.replaceSubrange(lengthAt..<lengthAt + 1, with: prefix)
        }
    }

    public mutating func record(_ tag: Int, _ value: some BinaryFields) {
        nested(tag) { value.encode(to: &$0) }
    }

    public mutating func record(_ tag: Int, _ value: (some BinaryFields)?) {
        if let value { record(tag, value) }
    }

    /// A string map as repeated entries (tag 1 key, tag 2 value), in key order so equal maps encode equally.
    public mutating func map(_ tag: Int, _ value: [String: String]) {
        for (name, text) in value.sorted(by: { $0.key < $1.key }) {
            nested(tag) { entry in
                entry.string(1, name)
                entry.string(2, text)
            }
        }
    }
}

/// Reads the fields of one binary record (or of a nested field list) from a byte buffer.
public struct BinaryRecordReader {
    private let base: UnsafeRawBufferPointer
    private var position: Int
    private let end: Int
    /// The wire type of the field ``next()`` returned last.
    public private(set) var wire: UInt8 = 0

    public init(_ buffer: UnsafeRawBufferPointer, from start: Int = 0, to end: Int? = nil) {
        base = buffer
        position = start
        self.end = end ?? buffer.count
    }

    public var isAtEnd: Bool { position >= end }

    private mutating func readVarint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard position < end else { throw BinaryRecordError("a varint runs past the end") }
            let byte = base[position]
            position += 1
            if shift == 63 && byte > 1 { throw BinaryRecordError("a varint overflows 64 bits") }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
    }

    /// The next field's tag, or nil at the end.
    public mutating func next() throws -> Int? {
        guard position < end else { return nil }
        let key = try readVarint()
        wire = UInt8(key & 7)
        guard wire == BinaryRecordFormat.varint || wire == BinaryRecordFormat.lengthDelimited else {
            throw BinaryRecordError("unknown wire type \(wire)")
        }
        guard key >> 3 <= UInt64(Int32.max) else { throw BinaryRecordError("a field tag is out of range") }
        return Int(key >> 3)
    }

    /// Skips the payload of the field ``next()`` returned (a tag this build does not know).
    public mutating func skip() throws {
        if wire == BinaryRecordFormat.varint {
            _ = try readVarint()
        } else {
            _ = try span()
        }
    }

    private mutating func expect(_ expected: UInt8) throws {
        guard wire == expected else { throw BinaryRecordError("a field has the wrong wire type") }
    }

    /// The byte range of a length-delimited payload, consumed.
    private mutating func span() throws -> Range<Int> {
        try expect(BinaryRecordFormat.lengthDelimited)
        let length = try readVarint()
        guard length <= UInt64(end - position) else { throw BinaryRecordError("a field runs past the end") }
        let start = position
        position += Int(length)
        return start..<position
    }

    public mutating func unsigned() throws -> UInt64 {
        try expect(BinaryRecordFormat.varint)
        return try readVarint()
    }

    public mutating func int64() throws -> Int64 {
        let raw = try unsigned()
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    public mutating func int() throws -> Int {
        let value = try int64()
        guard let result = Int(exactly: value) else { throw BinaryRecordError("an integer is out of range") }
        return result
    }

    public mutating func bool() throws -> Bool {
        switch try unsigned() {
        case 0: return false
        case 1: return true
        default: throw BinaryRecordError("a boolean is neither 0 nor 1")
        }
    }

    public mutating func string() throws -> String {
        let range = try span()
        return String(decoding: UnsafeRawBufferPointer(rebasing: base[range]), as: UTF8.self)
    }

    public mutating func bytes() throws -> [UInt8] {
        Array(UnsafeRawBufferPointer(rebasing: base[try span()]))
    }

    public mutating func nested() throws -> BinaryRecordReader {
        let range = try span()
        return BinaryRecordReader(base, from: range.lowerBound, to: range.upperBound)
    }

    public mutating func record<T: BinaryFields>(_ type: T.Type) throws -> T {
        var inner = try nested()
        return try T(from: &inner)
    }

    /// One entry of a string map written by ``BinaryRecordWriter/map(_:_:)``.
    public mutating func mapEntry(into map: inout [String: String]) throws {
        var entry = try nested()
        var name: String?
        var text: String?
        while let tag = try entry.next() {
            switch tag {
            case 1: name = try entry.string()
            case 2: text = try entry.string()
            default: try entry.skip()
            }
        }
        guard let name, let text else { throw BinaryRecordError("a map entry lacks its key or value") }
        map[name] = text
    }
}
