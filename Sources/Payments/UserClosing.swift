import VaultCore
import VaultCrypto
import VaultStore

/// The audit record of one vaulted card number erased when its user was closed: which card, whose, when. Never the
/// number, nor its alias or fingerprint.
public struct CardErasure: Sendable, Equatable, Codable {
    public var clientId: String
    public var userId: String
    public var cardId: String
    /// Unix seconds.
    public var erasedAt: Int64
    /// `user-closed`.
    public var reason: String
}

extension UserService {
    /// Changes the category of user `id` (`PAYER` ↔ `OWNER`) with the fields the new category needs (an OWNER:
    /// terms accepted, birthday, nationality and residence, or for a legal user its headquarters and representative),
    /// validated as a creation of that category is. Writes USER_CATEGORY_UPDATED_TO_OWNER or _TO_PAYER in the batch.
    /// - Throws: ``PaymentsError`` `.notFound`, `.invalidParameters` (a missing `UserCategory` or a field the category
    ///   needs), `.invalidState` for a closed user.
    public func categorize(clientId: String, id: String, type: PersonType, changes: UserFields) async throws -> User {
        var rules = FieldRules()
        rules.required(changes.userCategory, "UserCategory")
        rules.oneOf(changes.userCategory, ["PAYER", "OWNER"], "UserCategory")
        try rules.check()
        return try await retryingOnConflict(
            attempts: 5,
            exhausted: PaymentsError(
                .concurrentChange, "The user kept changing under this request; nothing was written")
        ) {
            guard let found = try await read(clientId: clientId, id: id), found.value.personType == type
            else { throw PaymentsError.notFound("User", id: id) }
            var user = found.value
            if user.closedAt != nil { throw PaymentsError(.invalidState, "A closed user cannot change") }
            let before = user.userCategory
            user.fields.merge(changes)
            let now = environment.nowSeconds
            try UserRules.validate(&user.fields, type: type, sca: user.sca, now: now)
            if user.fields.termsAndConditionsAccepted == true, user.termsAndConditionsAcceptedDate == nil {
                user.termsAndConditionsAcceptedDate = now
            }
            var writes: [RecordWrite] = [
                .put(
                    collection: Collections.users, id: Identifier.scoped(clientId, id),
                    value: try RecordCoding.encode(user), condition: .version(found.version))
            ]
            if user.userCategory != before {
                writes += try await EventLog.writes(
                    user.userCategory == "OWNER" ? .userCategoryUpdatedToOwner : .userCategoryUpdatedToPayer,
                    resourceId: id, clientId: clientId, environment: environment)
            }
            try await mapStoreErrors { try await environment.store.commit(writes) }
            return user
        }
    }
}

extension MerchantServices {
    /// Closes user `id` (the SDK's `close`, `DELETE /users/{natural|legal}/{id}`), in one batch: the user reads
    /// `UserStatus: CLOSED`; every card of theirs is deactivated (CARD_DEACTIVATED); every card number of theirs
    /// in the vault, including numbers tokenized for registrations never completed, is deleted (compaction then
    /// removes it from disk), each with a ``CardErasure`` audit record; USER_CLOSED. Closing again changes nothing.
    /// - Throws: ``PaymentsError`` `.notFound` for an unknown user (or one of another type).
    /// - Parameter type: the path's person type; nil closes a user of either type.
    public func closeUser(clientId: String, id: String, type: PersonType? = nil) async throws -> User {
        let store = environment.store
        return try await retryingOnConflict(
            attempts: 5,
            exhausted: PaymentsError(
                .concurrentChange, "The user or their cards kept changing under this request; nothing was written")
        ) {
            guard let found = try await users.read(clientId: clientId, id: id),
                type == nil || found.value.personType == type
            else { throw PaymentsError.notFound("User", id: id) }
            var user = found.value
            if user.closedAt != nil { return user }
            let now = environment.nowSeconds
            user.closedAt = now
            var writes: [RecordWrite] = [
                .put(
                    collection: Collections.users, id: Identifier.scoped(clientId, id),
                    value: try RecordCoding.encode(user), condition: .version(found.version))
            ]
            var erased: [String] = []
            // Registered cards.
            let prefix = Identifier.indexed(clientId, id, "")
            for entry in try await store.scanAll(Collections.cardsByUser, prefix: prefix) {
                let cardId = String(entry.id.dropFirst(prefix.count))
                if let stored = try await cards.read(clientId: clientId, id: cardId), stored.value.active {
                    var card = stored.value
                    card.active = false
                    writes.append(
                        .put(
                            collection: Collections.cards, id: Identifier.scoped(clientId, cardId),
                            value: try RecordCoding.encode(card), condition: .version(stored.version)))
                    writes += try await EventLog.writes(
                        .cardDeactivated, resourceId: cardId, clientId: clientId, environment: environment)
                }
                erased.append(cardId)
            }
            // Numbers tokenized for this user's registrations that never became cards.
            for record in try await store.scanAll(Collections.registrations, prefix: clientId + ":") {
                guard let registration = try? RecordCoding.decode(CardRegistration.self, from: record),
                    registration.userId == id, let pending = registration.pending
                else { continue }
                var cleared = registration
                cleared.pending = nil
                writes.append(
                    .put(
                        collection: Collections.registrations, id: record.id, value: try RecordCoding.encode(cleared),
                        condition: .version(record.version)))
                erased.append(pending.cardId)
            }
            var erasures = 0
            for cardId in erased {
                let vaultId = Identifier.scoped(clientId, cardId)
                guard try await store.get(Collections.vault, id: vaultId) != nil else { continue }
                erasures += 1
                writes.append(.delete(collection: Collections.vault, id: vaultId, condition: .unconditional))
                writes.append(
                    .put(
                        collection: Collections.cardErasures, id: vaultId,
                        value: try RecordCoding.encode(
                            CardErasure(
                                clientId: clientId, userId: id, cardId: cardId, erasedAt: now, reason: "user-closed")),
                        condition: .unconditional))
            }
            writes += try await EventLog.writes(
                .userClosed, resourceId: id, clientId: clientId, environment: environment)
            try await mapStoreErrors { try await store.commit(writes) }
            for cardId in erased { securityCodes.discard(clientId: clientId, cardId: cardId) }
            environment.logger.info(
                "user closed; card numbers erased",
                ["clientId": .string(clientId), "userId": .string(id), "erasedCardNumbers": .int(erasures)])
            return user
        }
    }
}
