import Foundation
import VaultStore

/// Encodes domain records for the store and back. Record types with a binary codec (``BinaryRecord``, see
/// ``BinaryRecordFormat``) are written in it; the others, and every record written before it, are JSON whose field
/// names are the Swift property names (stored records are internal, not the wire). Each stored value carries its
/// format in its first byte, so a reader takes either.
enum RecordCoding {
    /// JSON, for record types without a binary codec.
    static func encode(_ value: some Encodable) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array(try encoder.encode(value))
    }

    /// Decodes a record in whichever format it was stored (a binary one only for a type with a binary codec).
    static func decode<T: Decodable>(_ type: T.Type, from record: Record) throws -> T {
        if isBinary(record.value), let binary = type as? any BinaryRecord.Type {
            return try decodeBinaryRecord(binary, record.value) as! T
        }
        return try decodeJSON(type, from: record)
    }

    private static func decodeBinaryRecord<B: BinaryRecord>(_ type: B.Type, _ value: [UInt8]) throws -> any BinaryRecord {
        try decodeBinary(type, value)
    }

    static func decodeJSON<T: Decodable>(_ type: T.Type, from record: Record) throws -> T {
        try JSONDecoder().decode(type, from: Data(record.value))
    }
}

extension RecordStore {
    /// Reads and decodes one record, or nil when absent.
    func read<T: Decodable>(_ type: T.Type, _ collection: String, id: String) async throws -> Stored<T>? {
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
struct Stored<Value> {
    var value: Value
    var version: UInt64
}

extension Stored: Sendable where Value: Sendable {}

/// Store collections of the merchant API.
enum Collections {
    static let clients = "clients"
    static let bearerTokens = "bearer-tokens"
    static let users = "users"
    static let wallets = "wallets"
    static let walletsByUser = "wallets-by-user"
    static let registrations = "card-registrations"
    static let cards = "cards"
    static let cardsByUser = "cards-by-user"
    static let cardsByFingerprint = "cards-by-fingerprint"
    /// The vaulted card numbers, one record per card; the file store seals every value.
    static let vault = "card-numbers"
    static let profilingAttempts = "profiling-attempts"
    static let idempotency = "idempotent-responses"
}

/// Maps store failures to the API's errors: `unavailable` stays visible (503); others are unexpected.
@discardableResult
func mapStoreErrors<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as StoreError where error.code == .unavailable {
        throw PaymentsError(.unavailable, "The service cannot store data right now; retry later")
    }
}
