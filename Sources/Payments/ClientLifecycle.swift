import VaultCore
import VaultStore

/// The operator's changes to a client after it was created (`cardvault clients rotate-key|remove`).
extension ClientRegistry {
    /// Gives the client a fresh random API key (the old one stops working at once) and revokes its bearer tokens.
    /// - Returns: the new credentials (shown once, stored only as a salted hash).
    /// - Throws: ``PaymentsError`` `.notFound` for an unknown or removed client.
    public func rotateKey(clientId: String, tokens: BearerTokens) async throws -> ClientCredentials {
        let apiKey = Identifier.secret(count: 48, random: environment.random)
        try await update(clientId) { client in
            client.salt = environment.random.bytes(count: 16)
            client.keyHash = try Client.hash(apiKey: apiKey, salt: client.salt)
        }
        let revoked = try await tokens.revoke(clientId: clientId)
        environment.logger.notice(
            "client API key rotated", ["clientId": .string(clientId), "tokensRevoked": .int(revoked)])
        return ClientCredentials(clientId: clientId, apiKey: apiKey)
    }

    /// Ends a client: its API key and bearer tokens stop working at once. The client record stays as a tombstone
    /// (never listed, never authenticated), so its ClientId is not given to a new client that would then see the
    /// records made under it.
    /// - Returns: how many bearer tokens were revoked.
    /// - Throws: ``PaymentsError`` `.notFound` for an unknown or already removed client.
    @discardableResult
    public func remove(clientId: String, tokens: BearerTokens) async throws -> Int {
        let now = environment.nowSeconds
        try await update(clientId) { client in
            client.removedDate = now
            client.keyHash = []
            client.salt = []
        }
        let revoked = try await tokens.revoke(clientId: clientId)
        environment.logger.notice("client removed", ["clientId": .string(clientId), "tokensRevoked": .int(revoked)])
        return revoked
    }

    /// Every client that was not removed, ordered by ClientId.
    public func active() async throws -> [Client] {
        try await all().filter { $0.removedDate == nil }
    }

    private func update(_ clientId: String, _ change: (inout Client) throws -> Void) async throws {
        try await retryingOnConflict(
            attempts: 5, exhausted: PaymentsError(.concurrentChange, "The client kept changing; nothing was written")
        ) {
            guard Identifier.isWellFormed(clientId),
                let stored = try await environment.store.read(Client.self, Collections.clients, id: clientId),
                stored.value.removedDate == nil
            else { throw PaymentsError(.notFound, "There is no client \(clientId)") }
            var client = stored.value
            try change(&client)
            try await mapStoreErrors {
                try await environment.store.put(
                    Collections.clients, id: clientId, value: try RecordCoding.encode(client),
                    condition: .version(stored.version))
            }
        }
    }
}

extension BearerTokens {
    /// Deletes every bearer token of `clientId` (from the store and this daemon's cache).
    /// - Returns: how many stored tokens went.
    @discardableResult
    public func revoke(clientId: String) async throws -> Int {
        cache.withLock { cache in cache = cache.filter { $0.value.clientId != clientId } }
        var removed = 0
        for record in try await environment.store.scanAll(Collections.bearerTokens) {
            guard let entry = try? RecordCoding.decode(Entry.self, from: record), entry.clientId == clientId else {
                continue
            }
            try await environment.store.delete(Collections.bearerTokens, id: record.id)
            removed += 1
        }
        return removed
    }
}
