import Foundation

/// Encodes domain records for the store and back. Record types with a binary codec (``BinaryRecord``, see
/// ``BinaryRecordFormat``) are written in it; the others, and every record written before it, are JSON whose field
/// names are the Swift property names (stored records are internal, not the wire). Each stored value carries its
/// format in its first byte, so a reader takes either.
///
/// The binary paths are inlinable, so that each record type's module calls them specialized (unspecialized, every
/// encode and decode looked up its type's metadata and witnesses at run time).
public enum RecordCoding {
    /// JSON, for record types without a binary codec.
    public static func encode(_ value: some Encodable) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array(try encoder.encode(value))
    }

    /// Decodes a record in whichever format it was stored (a binary one only for a type with a binary codec).
    @inlinable
    public static func decode<T: Decodable>(_ type: T.Type, from record: Record) throws -> T {
        if isBinary(record.value), let binary = type as? any BinaryRecord.Type {
            return try decodeBinaryRecord(binary, record.value) as! T
        }
        return try decodeJSON(type, from: record)
    }

    @inlinable
    static func decodeBinaryRecord<B: BinaryRecord>(_ type: B.Type, _ value: [UInt8]) throws -> any BinaryRecord {
        try decodeBinary(type, value)
    }

    public static func decodeJSON<T: Decodable>(_ type: T.Type, from record: Record) throws -> T {
        try JSONDecoder().decode(type, from: Data(record.value))
    }

    /// Encodes a record in the binary format, header first.
    @inlinable
    public static func encode<T: BinaryRecord>(_ value: T) throws -> [UInt8] {
        var writer = BinaryRecordWriter()
        writer.bytes.append(BinaryRecordFormat.marker)
        writer.bytes.append(BinaryRecordFormat.version)
        writer.bytes.append(T.recordKind)
        value.encode(to: &writer)
        return writer.bytes
    }

    /// Decodes a record of a type with a binary codec: the binary format, or JSON written by earlier builds.
    @inlinable
    public static func decode<T: BinaryRecord>(_ type: T.Type, from record: Record) throws -> T {
        if isBinary(record.value) { return try decodeBinary(type, record.value) }
        return try decodeJSON(type, from: record)
    }

    @inlinable
    public static func decodeBinary<T: BinaryRecord>(_ type: T.Type, _ value: [UInt8]) throws -> T {
        try value.withUnsafeBytes { raw in
            guard raw.count >= BinaryRecordFormat.headerSize, raw[0] == BinaryRecordFormat.marker else {
                throw BinaryRecordError("not a binary record")
            }
            guard raw[1] == BinaryRecordFormat.version else {
                throw BinaryRecordError("binary record format version \(raw[1]) is not known to this build")
            }
            guard raw[2] == T.recordKind else {
                throw BinaryRecordError("a binary record of kind \(raw[2]) read as kind \(T.recordKind)")
            }
            var reader = BinaryRecordReader(raw, from: BinaryRecordFormat.headerSize)
            return try T(from: &reader)
        }
    }

    /// Whether a stored value is in the binary format.
    @inlinable
    public static func isBinary(_ value: [UInt8]) -> Bool { value.first == BinaryRecordFormat.marker }
}

extension RecordStore {
    /// Reads and decodes one record, or nil when absent.
    public func read<T: Decodable>(_ type: T.Type, _ collection: String, id: String) async throws -> Stored<T>? {
        guard let record = try await get(collection, id: id) else { return nil }
        return Stored(value: try RecordCoding.decode(type, from: record), version: record.version)
    }

    /// Reads and decodes one record of a type with a binary codec, or nil when absent. (Inlinable, so that a
    /// caller in another module specializes it: unspecialized, each call looked up `Stored<T>`'s metadata.)
    @inlinable @inline(__always)
    public func read<T: BinaryRecord>(_ type: T.Type, _ collection: String, id: String) async throws -> Stored<T>? {
        guard let record = try await get(collection, id: id) else { return nil }
        return Stored(value: try RecordCoding.decode(type, from: record), version: record.version)
    }
}

/// A decoded record and the store version it was read at (for a conditional write back).
///
/// Readers return this struct, not a `(value, version)` tuple: Swift 6.3.1's optimizer miscompiled a caller that
/// destructured such a tuple from an `async` call (`guard let (wallet, _) = try await read(…)`); the release
/// build returned only the first 16 bytes of the value and the rest was uninitialised memory (GET /wallets/{id}
/// crashed). Reading `.value` and `.version` from a struct keeps the whole value.
public struct Stored<Value> {
    public var value: Value
    public var version: UInt64

    public init(value: Value, version: UInt64) {
        self.value = value
        self.version = version
    }
}

extension Stored: Sendable where Value: Sendable {}
