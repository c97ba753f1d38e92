public import CardKit
import VaultCore
public import VaultCrypto
import VaultStore

/// Reads, lists and deactivates a client's cards, and reads the profiling attempts of tokenizations.
public struct CardService: Sendable {
    let environment: PaymentsEnvironment
    let users: UserService
    let securityCodes: SecurityCodeHold

    public init(environment: PaymentsEnvironment, securityCodes: SecurityCodeHold) {
        self.environment = environment
        self.users = UserService(environment: environment)
        self.securityCodes = securityCodes
    }

    /// The card `id` of `clientId`.
    /// - Throws: ``PaymentsError`` `.notFound`.
    public func get(clientId: String, id: String) async throws -> Card {
        guard let found = try await read(clientId: clientId, id: id) else {
            throw PaymentsError.notFound("Card", id: id)
        }
        let card = found.value
        return card
    }

    func read(clientId: String, id: String) async throws -> Stored<Card>? {
        guard Identifier.isWellFormed(id) else { return nil }
        return try await environment.store.read(Card.self, Collections.cards, id: Identifier.scoped(clientId, id))
    }

    /// Applies `Active`: false deactivates the card for good (and drops any held security code); true on an
    /// active card changes nothing; true on a deactivated card is refused.
    public func update(clientId: String, id: String, active: Bool?) async throws -> Card {
        return try await retryingOnConflict(
            attempts: 5,
            exhausted: PaymentsError(
                .concurrentChange, "The card kept changing under this request; nothing was written")
        ) {
            guard let found = try await read(clientId: clientId, id: id) else {
                throw PaymentsError.notFound("Card", id: id)
            }
            let current = found.value
            let version = found.version
            var card = current
            guard let active, active != card.active else { return card }
            if active {
                throw PaymentsError.invalid("Active", "A deactivated card cannot be activated again.")
            }
            card.active = false
            try await mapStoreErrors {
                try await environment.store.commit(
                    [
                        .put(
                            collection: Collections.cards, id: Identifier.scoped(clientId, id),
                            value: try RecordCoding.encode(card), condition: .version(version))
                    ] + EventLog.writes(.cardDeactivated, resourceId: id, clientId: clientId, environment: environment))
            }
            securityCodes.discard(clientId: clientId, cardId: id)
            environment.logger.info("card deactivated", ["clientId": .string(clientId), "cardId": .string(id)])
            return card
        }
    }

    /// The cards of user `userId`.
    /// - Throws: ``PaymentsError`` `.notFound` when the user does not exist.
    public func list(clientId: String, userId: String, page: PageRequest) async throws -> Page<Card> {
        guard try await users.exists(clientId: clientId, id: userId) else {
            throw PaymentsError.notFound("User", id: userId)
        }
        return page.slice(
            try await indexed(Collections.cardsByUser, clientId: clientId, key: userId), creationDate: \.creationDate,
            id: \.id)
    }

    /// The cards of this client with fingerprint `fingerprint` (none for an unknown or malformed one).
    public func list(clientId: String, fingerprint: String, page: PageRequest) async throws -> Page<Card> {
        guard fingerprint.utf8.count == 32, Identifier.isWellFormed(fingerprint) else {
            return page.slice([Card](), creationDate: \.creationDate, id: \.id)
        }
        return page.slice(
            try await indexed(Collections.cardsByFingerprint, clientId: clientId, key: fingerprint),
            creationDate: \.creationDate, id: \.id)
    }

    /// Every card of `clientId` with `fingerprint` (none for a malformed one).
    func all(clientId: String, fingerprint: String) async throws -> [Card] {
        guard fingerprint.utf8.count == 32, Identifier.isWellFormed(fingerprint) else { return [] }
        return try await indexed(Collections.cardsByFingerprint, clientId: clientId, key: fingerprint)
    }

    private func indexed(_ collection: String, clientId: String, key: String) async throws -> [Card] {
        var cards: [Card] = []
        let prefix = Identifier.indexed(clientId, key, "")
        for entry in try await environment.store.scanAll(collection, prefix: prefix) {
            if let found = try await read(clientId: clientId, id: String(entry.id.dropFirst(prefix.count))) {
                let card = found.value
                cards.append(card)
            }
        }
        return cards
    }

    /// The profiling attempt `reference` of `clientId`.
    /// - Throws: ``PaymentsError`` `.notFound`.
    public func profilingAttempt(clientId: String, reference: String) async throws -> ProfilingAttempt {
        guard Identifier.isWellFormed(reference),
            let attempt = try await environment.store.read(
                ProfilingAttempt.self, Collections.profilingAttempts, id: Identifier.scoped(clientId, reference))
        else { throw PaymentsError.notFound("ProfilingAttempt", id: reference) }
        return attempt.value
    }

    /// The vaulted number and expiry of a card, for the one flow that hands them to the card network (pay-ins).
    /// Never return them to a merchant or log them; the PAN prints as its alias.
    public func vaultedNumber(clientId: String, cardId: String) async throws -> (PAN, CardExpiry) {
        guard Identifier.isWellFormed(cardId),
            let record = try await environment.store.get(Collections.vault, id: Identifier.scoped(clientId, cardId)),
            let decoded = CardNumberRecord.decode(record.value)
        else { throw PaymentsError.notFound("Card", id: cardId) }
        return decoded
    }
}
