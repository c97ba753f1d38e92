import VaultCore
import VaultStore

/// Creates, reads and updates a client's users.
public struct UserService: Sendable {
    let environment: PaymentsEnvironment

    public init(environment: PaymentsEnvironment) {
        self.environment = environment
    }

    /// Creates a user of `type` from `fields` after validating them.
    /// - Parameter sca: created through `/sca/users/...` (stricter: `UserCategory` and T&C required).
    public func create(clientId: String, type: PersonType, sca: Bool, fields: UserFields) async throws -> User {
        var fields = fields
        let now = environment.nowSeconds
        try UserRules.validate(&fields, type: type, sca: sca, now: now)
        let user = User(
            id: Identifier.make("user_", random: environment.random), clientId: clientId, personType: type, sca: sca,
            creationDate: now, termsAndConditionsAcceptedDate: fields.termsAndConditionsAccepted == true ? now : nil,
            fields: fields)
        try await mapStoreErrors {
            try await environment.store.commit(
                [
                    .put(
                        collection: Collections.users, id: Identifier.scoped(clientId, user.id),
                        value: try RecordCoding.encode(user), condition: .absent)
                ]
                    + EventLog.writes(
                        type == .natural ? .userNaturalCreated : .userLegalCreated, resourceId: user.id,
                        clientId: clientId, environment: environment))
        }
        return user
    }

    /// The user `id` of `clientId`; when `type` is given, a user of another type counts as absent.
    /// - Throws: ``PaymentsError`` `.notFound`.
    public func get(clientId: String, id: String, type: PersonType? = nil) async throws -> User {
        guard let found = try await read(clientId: clientId, id: id), type == nil || found.value.personType == type
        else {
            throw PaymentsError.notFound("User", id: id)
        }
        let user = found.value
        return user
    }

    /// The users of `clientId`, a page at a time.
    public func list(clientId: String, page: PageRequest) async throws -> Page<User> {
        let records = try await environment.store.scanAll(Collections.users, prefix: Identifier.scoped(clientId, ""))
        return page.slice(
            try records.map { try RecordCoding.decode(User.self, from: $0) }, creationDate: \.creationDate, id: \.id)
    }

    /// Whether `id` names a user of `clientId`.
    public func exists(clientId: String, id: String) async throws -> Bool {
        // Presence only: no need to decode the user (JSON decoding is most of a registration's CPU).
        guard Identifier.isWellFormed(id) else { return false }
        return try await environment.store.get(Collections.users, id: Identifier.scoped(clientId, id)) != nil
    }

    func read(clientId: String, id: String) async throws -> Stored<User>? {
        guard Identifier.isWellFormed(id) else { return nil }
        return try await environment.store.read(User.self, Collections.users, id: Identifier.scoped(clientId, id))
    }

    /// Applies the fields `changes` sets to user `id` (of `type`), validates the result and stores it.
    public func update(clientId: String, id: String, type: PersonType, changes: UserFields) async throws -> User {
        return try await retryingOnConflict(
            attempts: 5,
            exhausted: PaymentsError(
                .concurrentChange, "The user kept changing under this request; nothing was written")
        ) {
            guard let found = try await read(clientId: clientId, id: id), found.value.personType == type
            else { throw PaymentsError.notFound("User", id: id) }
            let current = found.value
            let version = found.version
            var user = current
            user.fields.merge(changes)
            let now = environment.nowSeconds
            try UserRules.validate(&user.fields, type: type, sca: user.sca, now: now)
            if user.fields.termsAndConditionsAccepted == true, user.termsAndConditionsAcceptedDate == nil {
                user.termsAndConditionsAcceptedDate = now
            }
            try await mapStoreErrors {
                try await environment.store.put(
                    Collections.users, id: Identifier.scoped(clientId, id), value: try RecordCoding.encode(user),
                    condition: .version(version))
            }
            return user
        }
    }
}
