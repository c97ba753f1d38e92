import Foundation
public import VaultStore

/// One use of a card's data outside the vault, for the card's audit (`GET /v2.01/{ClientId}/cards/{CardId}/accesses`):
/// who, which card, where to, when, under which request id, with which result. Never the data itself.
public struct CardAccess: Sendable, Equatable, Codable {
    public enum Outcome: String, Sendable, Codable {
        /// Written before the card was read; a forward that never finished (a crash) stays so.
        case pending = "PENDING"
        /// The destination answered (``CardAccess/status`` holds its status).
        case sent = "SENT"
        /// No answer: connection, TLS or protocol failure.
        case failed = "FAILED"
        /// No answer within the timeout.
        case timeout = "TIMEOUT"
    }

    public var id: String
    public var clientId: String
    public var cardId: String
    /// `FORWARD`.
    public var operation: String
    public var method: String
    public var destinationHost: String
    /// The card fields sent (`number`, `expiry`, `cvc`, ...).
    public var fields: [String]
    public var requestId: String
    /// The destination's HTTP status, once it answered.
    public var status: Int?
    public var outcome: Outcome
    /// Unix seconds.
    public var creationDate: Int64
}

/// The card access records in the store: one record per access, under `clientId:cardId:<time-ordered id>`, so that
/// a card's accesses list in order and a write never rewrites older ones.
struct CardAccessLog: Sendable {
    static let collection = "card-accesses"
    let store: any RecordStore

    static func recordId(_ access: CardAccess) -> String {
        access.clientId + ":" + access.cardId + ":" + access.id
    }

    func write(_ accesses: [CardAccess]) async throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var writes: [RecordWrite] = []
        for access in accesses {
            writes.append(
                .put(
                    collection: Self.collection, id: Self.recordId(access), value: Array(try encoder.encode(access)),
                    condition: .unconditional))
        }
        _ = try await store.commit(writes)
    }

    /// The accesses of a card, oldest first.
    func accesses(clientId: String, cardId: String) async throws -> [CardAccess] {
        let decoder = JSONDecoder()
        return try await store.scanAll(Self.collection, prefix: clientId + ":" + cardId + ":").map {
            try decoder.decode(CardAccess.self, from: Data($0.value))
        }
    }
}

/// Which clients the operator allowed to forward card data (`cardvault clients forward ID --on`). Off by default.
public struct ForwardPermissions: Sendable {
    static let collection = "forward-permissions"
    let store: any RecordStore

    public init(store: any RecordStore) {
        self.store = store
    }

    private struct Permission: Codable {
        var enabled: Bool
        var changedAt: Int64
    }

    /// Whether `clientId` may forward.
    public func isEnabled(clientId: String) async throws -> Bool {
        guard let record = try await store.get(Self.collection, id: clientId) else { return false }
        return (try? JSONDecoder().decode(Permission.self, from: Data(record.value)))?.enabled ?? false
    }

    /// Turns forwarding on or off for `clientId`.
    public func set(clientId: String, enabled: Bool, now: Int64) async throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try await store.put(
            Self.collection, id: clientId,
            value: Array(try encoder.encode(Permission(enabled: enabled, changedAt: now))))
    }
}
