import Foundation
import VaultCore
import VaultCrypto
import VaultStore

/// A merchant allowed to use the API: its ClientId, a display name, and its API key kept only as a salted hash.
public struct Client: Sendable, Equatable, Codable {
    public var clientId: String
    public var name: String
    public var creationDate: Int64
    /// Per-client random salt for the key hash.
    var salt: [UInt8]
    /// HKDF-SHA256(ikm: API key, salt: salt, info: "cardvault api key v1"), 32 bytes.
    var keyHash: [UInt8]
    /// When `cardvault clients remove` ended the client: it cannot authenticate any more, and its ClientId is never
    /// given to a new client (its records still name it).
    public var removedDate: Int64? = nil

    /// Hashes `apiKey` with `salt` the way stored clients do.
    static func hash(apiKey: String, salt: [UInt8]) throws -> [UInt8] {
        let key = SymmetricKey(copying: Array(apiKey.utf8))
        let derived = try HKDF.deriveKey(inputKeyMaterial: key, salt: salt, info: Array("cardvault api key v1".utf8))
        return derived.withUnsafeBytes { Array($0) }
    }

    /// True when `apiKey` is this client's key (constant-time comparison of the hashes).
    func verifies(apiKey: String) -> Bool {
        guard let candidate = try? Self.hash(apiKey: apiKey, salt: salt) else { return false }
        return ConstantTime.equals(candidate, keyHash)
    }
}

/// A client just created, with its API key in clear: shown once, never stored.
public struct ClientCredentials: Sendable {
    public var clientId: String
    public var apiKey: String
}

/// Creates clients and checks their credentials.
public struct ClientRegistry: Sendable {
    let environment: PaymentsEnvironment

    public init(environment: PaymentsEnvironment) {
        self.environment = environment
    }

    /// The ClientId a name gives: lower case letters, digits and `-`, other characters dropped, spaces as `-`.
    public static func clientId(forName name: String) -> String {
        var out = [UInt8]()
        for byte in name.lowercased().utf8 {
            if (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D || byte == 0x5F {
                out.append(byte)
            } else if byte == 0x20, out.last != 0x2D, !out.isEmpty {
                out.append(0x2D)
            }
        }
        while out.last == 0x2D { out.removeLast() }
        return String(decoding: out.prefix(50), as: UTF8.self)
    }

    /// Creates a client named `name` with a fresh random API key.
    /// - Throws: ``PaymentsError`` `.invalidParameters` when the name gives no usable ClientId,
    ///   `.alreadyExists` when that ClientId is taken.
    public func create(name: String) async throws -> ClientCredentials {
        let clientId = Self.clientId(forName: name)
        guard !clientId.isEmpty else {
            throw PaymentsError.invalid("Name", "The name must contain at least one letter or digit")
        }
        let apiKey = Identifier.secret(count: 48, random: environment.random)
        let salt = environment.random.bytes(count: 16)
        let client = Client(
            clientId: clientId, name: name, creationDate: environment.nowSeconds, salt: salt,
            keyHash: try Client.hash(apiKey: apiKey, salt: salt))
        do {
            try await mapStoreErrors {
                try await environment.store.put(
                    Collections.clients, id: clientId, value: try RecordCoding.encode(client), condition: .absent)
            }
        } catch let error as StoreError where error.code == .conflict {
            throw PaymentsError(.alreadyExists, "A client with the ClientId \(clientId) exists already")
        }
        environment.logger.info("client created", ["clientId": .string(clientId)])
        return ClientCredentials(clientId: clientId, apiKey: apiKey)
    }

    /// The client with this id, or nil.
    public func client(_ clientId: String) async throws -> Client? {
        guard Identifier.isWellFormed(clientId) else { return nil }
        return try await environment.store.read(Client.self, Collections.clients, id: clientId)?.value
    }

    /// Every client, ordered by ClientId.
    public func all() async throws -> [Client] {
        try await environment.store.scanAll(Collections.clients).map { try RecordCoding.decode(Client.self, from: $0) }
    }

    /// Checks a ClientId and API key.
    /// - Throws: ``PaymentsError`` `.invalidClient` when either is wrong (the same answer for both).
    public func authenticate(clientId: String, apiKey: String) async throws -> Client {
        guard let client = try await client(clientId), client.removedDate == nil, client.verifies(apiKey: apiKey) else {
            throw PaymentsError(.invalidClient, "The authorization header was malformed or not recognized")
        }
        return client
    }
}
