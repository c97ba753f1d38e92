import Foundation

/// Encodes domain records as JSON for the store and back. Stored records are internal: their field names are the
/// Swift property names, not the wire's.
public enum RecordCoding {
    public static func encode(_ value: some Encodable) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array(try encoder.encode(value))
    }

    public static func decode<T: Decodable>(_ type: T.Type, from record: Record) throws -> T {
        try JSONDecoder().decode(type, from: Data(record.value))
    }
}

extension RecordStore {
    /// Reads and decodes one record, or nil when absent.
    public func read<T: Decodable>(_ type: T.Type, _ collection: String, id: String) async throws -> Stored<T>? {
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
