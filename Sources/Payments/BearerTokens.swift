import Foundation
public import VaultCore
import VaultCrypto
import VaultStore

/// An OAuth bearer token just issued: the token in clear (shown once) and its lifetime.
public struct IssuedToken: Sendable {
    public var accessToken: Redacted<String>
    public var expiresIn: Int
}

/// Issues and checks OAuth2 client-credentials bearer tokens.
///
/// Tokens are 40 random alphanumeric characters. Only their SHA-256-based digest is kept: in the store (so a
/// restart does not log merchants out) and in a memory cache in front of it, which holds at most
/// ``PaymentsConfiguration/bearerTokenCacheCapacity`` entries (past it, expired entries go first, then those
/// that expire soonest; a token dropped from the cache is read from the store again). A token expires after
/// ``PaymentsConfiguration/bearerTokenLifetime``; expired entries are dropped when met and by the sweeper
/// (``purgeExpired()``). A cached entry is read from the store again once it is ``recheckSeconds`` old, so a
/// token revoked through another daemon on the same database (`clients rotate-key`, `clients remove`) stops
/// working here within a second.
public final class BearerTokens: Sendable {
    struct Entry: Codable, Sendable {
        var clientId: String
        var expiresAt: Int64
        /// When this daemon last read the entry from the store (memory only, never stored).
        var checkedAt: Int64 = 0

        enum CodingKeys: String, CodingKey {
            case clientId, expiresAt
        }
    }

    /// How long a cached entry is trusted before the store is asked again.
    static let recheckSeconds: Int64 = 1

    let environment: PaymentsEnvironment
    let cache = Locked<[String: Entry]>([:])
    /// The fixed key of the token digest (domain separation only; the tokens themselves carry 238 bits).
    private static let digestKey = SymmetricKey(copying: Array("cardvault bearer token digest v1".utf8))

    public init(environment: PaymentsEnvironment) {
        self.environment = environment
    }

    /// The token's digest in hex, MACed from the string's own UTF-8 (no copy of the token) into a stack buffer.
    private static func digest(_ token: String) -> String {
        var token = token
        var mac: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        return withUnsafeMutableBytes(of: &mac) { out in
            let count = token.withUTF8 {
                HMACSHA256.authenticationCode(for: UnsafeRawBufferPointer($0), using: digestKey, into: out)
            }
            return Identifier.hex(UnsafeRawBufferPointer(rebasing: out[0..<count]))
        }
    }

    /// The sweeper's index of tokens by expiry (``DeadlineIndex``), so that a round reads the expired tokens only.
    static let deadlines = DeadlineIndex(collection: Collections.bearerTokenDeadlines)

    /// Issues a token for `client`.
    public func issue(for client: Client) async throws -> IssuedToken {
        let token = Identifier.secret(count: 40, random: environment.random)
        let lifetime = Int(environment.configuration.bearerTokenLifetime)
        let now = environment.nowSeconds
        let entry = Entry(clientId: client.clientId, expiresAt: now + Int64(lifetime), checkedAt: now)
        let digest = Self.digest(token)
        try await mapStoreErrors {
            try await environment.store.commit([
                .put(
                    collection: Collections.bearerTokens, id: digest, value: try RecordCoding.encode(entry),
                    condition: .absent),
                Self.deadlines.entry(for: digest, at: entry.expiresAt),
            ])
        }
        remember(digest, entry)
        return IssuedToken(accessToken: Redacted(token), expiresIn: lifetime)
    }

    /// The ClientId a valid, unexpired token belongs to.
    /// - Throws: ``PaymentsError`` `.invalidToken` for an unknown or expired token.
    public func clientId(forToken token: String) async throws -> String {
        guard token.utf8.count == 40, token.utf8.allSatisfy(Identifier.isIdentifierByte) else {
            throw Self.invalid
        }
        let digest = Self.digest(token)
        let now = environment.nowSeconds
        var entry = cache.withLock { $0[digest] }
        if let cached = entry, now - cached.checkedAt >= Self.recheckSeconds || now < cached.checkedAt {
            entry = nil  // another daemon on the same store may have revoked it meanwhile
        }
        if entry == nil {
            if let stored = try await environment.store.read(Entry.self, Collections.bearerTokens, id: digest) {
                var fresh = stored.value
                fresh.checkedAt = now
                entry = fresh
                remember(digest, fresh)
            } else {
                cache.withLock { _ = $0.removeValue(forKey: digest) }
            }
        }
        guard let entry else { throw Self.invalid }
        guard now < entry.expiresAt else {
            cache.withLock { _ = $0.removeValue(forKey: digest) }
            try? await environment.store.delete(Collections.bearerTokens, id: digest)
            throw Self.invalid
        }
        return entry.clientId
    }

    /// How many tokens the memory cache holds now.
    public var cachedCount: Int { cache.withLock { $0.count } }

    /// Puts an entry in the cache, making room first when it is full.
    private func remember(_ digest: String, _ entry: Entry) {
        let capacity = max(1, environment.configuration.bearerTokenCacheCapacity)
        let now = environment.nowSeconds
        cache.withLock { cache in
            if cache[digest] == nil, cache.count >= capacity {
                cache = cache.filter { $0.value.expiresAt > now }
                if cache.count >= capacity {
                    // Drop a quarter at once (those that expire soonest), so a full cache is not sorted per insert.
                    let excess = cache.count - capacity + 1 + capacity / 4
                    for (key, _) in cache.sorted(by: { $0.value.expiresAt < $1.value.expiresAt }).prefix(excess) {
                        cache.removeValue(forKey: key)
                    }
                }
            }
            cache[digest] = entry
        }
    }

    /// Drops expired tokens from the memory cache only (the sweeper ends the stored ones); returns how many stay.
    @discardableResult
    public func purgeExpiredFromCache() -> Int {
        let now = environment.nowSeconds
        return cache.withLock { cache in
            cache = cache.filter { $0.value.expiresAt > now }
            return cache.count
        }
    }

    /// Removes expired tokens from memory and the store; returns how many went.
    @discardableResult
    public func purgeExpired() async throws -> Int {
        let now = environment.nowSeconds
        cache.withLock { cache in cache = cache.filter { $0.value.expiresAt > now } }
        var removed = 0
        for record in try await environment.store.scanAll(Collections.bearerTokens) {
            let entry = try RecordCoding.decode(Entry.self, from: record)
            if entry.expiresAt <= now {
                try await environment.store.delete(Collections.bearerTokens, id: record.id)
                removed += 1
            }
        }
        return removed
    }

    private static let invalid = PaymentsError(.invalidToken, "The authorization credentials are not valid")
}
