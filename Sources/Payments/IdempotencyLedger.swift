import Foundation
import VaultCrypto
import VaultStore

/// A response kept for an idempotency key: what a replay sends back and what `GET /responses/{key}` shows.
public struct StoredResponse: Sendable, Equatable, Codable {
    public var statusCode: Int
    public var contentType: String
    public var body: [UInt8]
    /// The path of the original request.
    public var requestURL: String
    public var date: Int64

    public init(statusCode: Int, contentType: String, body: [UInt8], requestURL: String, date: Int64) {
        self.statusCode = statusCode
        self.contentType = contentType
        self.body = body
        self.requestURL = requestURL
        self.date = date
    }
}

/// `Idempotency-Key` handling for POSTs: the first request with a key reserves it and runs; a later request with
/// the same key and the same method, path and body gets the stored response again; with anything else it is a
/// conflict (409). Entries last ``PaymentsConfiguration/idempotencyRetention`` (24 hours); a reservation still
/// without a response after ``PaymentsConfiguration/idempotencyInProgressTimeout`` (60 s) counts as absent.
public struct IdempotencyLedger: Sendable {
    struct Entry: Codable, Equatable {
        /// HMAC-SHA256 digest of method, path and body.
        var requestDigest: [UInt8]
        var createdAt: Int64
        /// nil while the first request is still running.
        var response: StoredResponse?
    }

    /// What to do with a request that carries a key.
    public enum Decision: Sendable, Equatable {
        /// Run the request, then ``record(clientId:key:response:)`` its response.
        case proceed
        /// Send this stored response again.
        case replay(StoredResponse)
    }

    let environment: PaymentsEnvironment
    private static let digestKey = SymmetricKey(copying: Array("cardvault idempotency digest v1".utf8))

    public init(environment: PaymentsEnvironment) {
        self.environment = environment
    }

    /// True when `key` is 16–36 characters of letters, digits and `-`.
    public static func isValidKey(_ key: String) -> Bool {
        let bytes = key.utf8
        return (16...36).contains(bytes.count)
            && bytes.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D }
    }

    private static func digest(method: String, path: String, body: [UInt8]) -> [UInt8] {
        var message = Array((method + " " + path + "\n").utf8)
        message += body
        return HMACSHA256.authenticationCode(for: message, using: digestKey)
    }

    /// The sweeper's index of entries by expiry (``DeadlineIndex``), so that a round reads the expired entries only.
    static let deadlines = DeadlineIndex(collection: Collections.idempotencyDeadlines)

    /// When the sweeper deletes an entry: `retention` (``PaymentsConfiguration/idempotencyRetention``) after its
    /// first request.
    static func expiry(of entry: Entry, retention: TimeInterval) -> Int64 {
        entry.createdAt + Int64(retention.rounded(.down))
    }

    /// Reserves `key` for this request or finds its earlier response.
    /// - Throws: ``PaymentsError`` `.invalidParameters` for a malformed key, `.idempotencyConflict` when the key
    ///   was used with another request or its first request is still running.
    public func begin(
        clientId: String, key: String, method: String, path: String, body: [UInt8]
    ) async throws
        -> Decision
    {
        guard Self.isValidKey(key) else {
            throw PaymentsError.invalid(
                "Idempotency-Key", "The Idempotency-Key must be 16 to 36 characters of letters, digits and '-'.")
        }
        let digest = Self.digest(method: method, path: path, body: body)
        let id = try recordId(clientId, key)
        let now = environment.nowSeconds
        let entry = Entry(requestDigest: digest, createdAt: now, response: nil)
        let retention = environment.configuration.idempotencyRetention
        return try await retryingOnConflict(attempts: 3, exhausted: Self.conflict) {
            if let found = try await environment.store.read(Entry.self, Collections.idempotency, id: id) {
                let existing = found.value
                let version = found.version
                let age = Double(now - existing.createdAt)
                let expired = age >= environment.configuration.idempotencyRetention
                // A reservation whose request never answered (the process died mid-request) times
                // out into "not started".
                let stalled = existing.response == nil && age >= environment.configuration.idempotencyInProgressTimeout
                if expired || stalled {
                    try await mapStoreErrors {
                        try await environment.store.put(
                            Collections.idempotency, id: id, value: try RecordCoding.encode(entry),
                            condition: .version(version))
                    }
                    return .proceed
                }
                guard ConstantTime.equals(existing.requestDigest, digest), let response = existing.response else {
                    throw Self.conflict
                }
                return .replay(response)
            }
            try await mapStoreErrors {
                try await environment.store.commit([
                    .put(
                        collection: Collections.idempotency, id: id, value: try RecordCoding.encode(entry),
                        condition: .absent),
                    // Unconditional: an abandoned reservation's entry is still there when the key comes again.
                    Self.deadlines.entry(
                        for: id, at: Self.expiry(of: entry, retention: retention), condition: .unconditional),
                ])
            }
            return .proceed
        }
    }

    /// Stores the response of the request that reserved `key`.
    public func record(clientId: String, key: String, response: StoredResponse) async throws {
        let id = try recordId(clientId, key)
        guard let found = try await environment.store.read(Entry.self, Collections.idempotency, id: id) else {
            return
        }
        let stored = found.value
        let version = found.version
        var entry = stored
        entry.response = response
        try await mapStoreErrors {
            try await environment.store.put(
                Collections.idempotency, id: id, value: try RecordCoding.encode(entry), condition: .version(version))
        }
    }

    /// Releases a reservation whose request failed before producing a response worth keeping.
    public func abandon(clientId: String, key: String) async throws {
        try await environment.store.delete(Collections.idempotency, id: try recordId(clientId, key))
    }

    /// The stored response for `key`, within the retention time.
    /// - Throws: ``PaymentsError`` `.correlationIdNotFound`.
    public func response(clientId: String, key: String) async throws -> StoredResponse {
        guard Self.isValidKey(key),
            let entry = try await environment.store.read(
                Entry.self, Collections.idempotency, id: try recordId(clientId, key)),
            let response = entry.value.response,
            Double(environment.nowSeconds - entry.value.createdAt) < environment.configuration.idempotencyRetention
        else {
            throw PaymentsError(.correlationIdNotFound, "No response was found for this idempotency key")
        }
        return response
    }

    /// The record id of `key`: a keyed hash, so that the store never holds the merchant's key in clear.
    private func recordId(_ clientId: String, _ key: String) throws -> String {
        try environment.recordIds.scoped(clientId, key)
    }

    private static let conflict = PaymentsError(
        .idempotencyConflict, "A resource has already been created with this Idempotency Key")
}
