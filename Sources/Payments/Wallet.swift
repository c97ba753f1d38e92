import CardKit
import VaultCore
import VaultStore

/// A wallet of one owner, holding a balance in integer minor units of its currency.
public struct Wallet: Sendable, Equatable, Codable {
    public var id: String
    public var clientId: String
    public var ownerId: String
    public var description: String
    public var currency: String
    /// The balance in minor units of ``currency`` (cents for EUR).
    public var balance: Int64
    public var tag: String?
    public var creationDate: Int64
    /// `DEFAULT` for user wallets.
    public var fundsType: String { "DEFAULT" }
}

/// Creates, reads, updates and lists a client's wallets.
public struct WalletService: Sendable {
    let environment: PaymentsEnvironment
    let users: UserService

    public init(environment: PaymentsEnvironment) {
        self.environment = environment
        self.users = UserService(environment: environment)
    }

    /// Creates a wallet for exactly one owner, in a valid ISO 4217 currency, with a zero balance.
    public func create(
        clientId: String, owners: [String]?, description: String?, currency: String?, tag: String?
    ) async throws -> Wallet {
        var rules = FieldRules()
        if let owners {
            if owners.count != 1 { rules.fail("Owners", "A wallet must have exactly one owner.") }
        } else {
            rules.fail("Owners", "The Owners field is required.")
        }
        rules.required(description, "Description")
        rules.required(currency, "Currency")
        if let currency, Currency(code: currency) == nil {
            rules.fail(
                "Currency",
                "The code \(FieldRules.quote(currency)) cannot be found in the standard ISO 4217 : http://en.wikipedia.org/wiki/ISO_4217"
            )
        }
        rules.length(tag, "Tag")
        try rules.check()
        let ownerId = owners![0]
        guard try await users.exists(clientId: clientId, id: ownerId) else {
            throw PaymentsError.invalid("Owners", "The user \(Identifier.printable(ownerId)) does not exist.")
        }
        let wallet = Wallet(
            id: Identifier.make("wlt_", random: environment.random), clientId: clientId, ownerId: ownerId,
            description: description!, currency: currency!, balance: 0, tag: tag, creationDate: environment.nowSeconds)
        try await mapStoreErrors {
            try await environment.store.commit([
                .put(
                    collection: Collections.wallets, id: Identifier.scoped(clientId, wallet.id),
                    value: try RecordCoding.encode(wallet), condition: .absent),
                .put(
                    collection: Collections.walletsByUser, id: Identifier.indexed(clientId, ownerId, wallet.id),
                    value: [], condition: .absent),
            ])
        }
        return wallet
    }

    /// The wallet `id` of `clientId`.
    /// - Throws: ``PaymentsError`` `.notFound`.
    public func get(clientId: String, id: String) async throws -> Wallet {
        guard let found = try await read(clientId: clientId, id: id) else {
            throw PaymentsError.notFound("Wallet", id: id)
        }
        let wallet = found.value
        return wallet
    }

    func read(clientId: String, id: String) async throws -> Stored<Wallet>? {
        guard Identifier.isWellFormed(id) else { return nil }
        return try await environment.store.read(Wallet.self, Collections.wallets, id: Identifier.scoped(clientId, id))
    }

    /// Changes the description and tag (the only editable fields); other fields are ignored.
    public func update(clientId: String, id: String, description: String?, tag: String?) async throws -> Wallet {
        var rules = FieldRules()
        if let description { rules.required(description, "Description") }
        rules.length(tag, "Tag")
        try rules.check()
        return try await retryingOnConflict(
            attempts: 10,
            exhausted: PaymentsError(
                .concurrentChange, "The wallet kept changing under this request; nothing was written")
        ) {
            // The wallet's turn, as credits take it (``PaymentsEnvironment/walletTurns``).
            let turn = await environment.walletTurns.take(Identifier.scoped(clientId, id))
            defer { turn.finish(failed: false) }
            let handed = turn.latest
            guard let found = try await (handed == nil ? read(clientId: clientId, id: id) : handed) else {
                throw PaymentsError.notFound("Wallet", id: id)
            }
            let version = found.version
            var wallet = found.value
            if let description { wallet.description = description }
            if let tag { wallet.tag = tag }
            let handing = Stored(value: wallet, version: version + 1)
            do {
                try await mapStoreErrors {
                    try await environment.store.commit(
                        [
                            .put(
                                collection: Collections.wallets, id: Identifier.scoped(clientId, id),
                                value: try RecordCoding.encode(wallet), condition: .version(version))
                        ], whenQueued: { queued in turn.hand(queued ? handing : nil) })
                }
            } catch let error as StoreError where error.code == .conflict {
                await turn.settle()
                throw error
            }
            return wallet
        }
    }

    /// The wallets of user `userId`, a page at a time.
    /// - Throws: ``PaymentsError`` `.notFound` when the user does not exist.
    public func list(clientId: String, userId: String, page: PageRequest) async throws -> Page<Wallet> {
        guard try await users.exists(clientId: clientId, id: userId) else {
            throw PaymentsError.notFound("User", id: userId)
        }
        var wallets: [Wallet] = []
        let prefix = Identifier.indexed(clientId, userId, "")
        for entry in try await environment.store.scanAll(Collections.walletsByUser, prefix: prefix) {
            let walletId = String(entry.id.dropFirst(prefix.count))
            if let found = try await read(clientId: clientId, id: walletId) {
                let wallet = found.value
                wallets.append(wallet)
            }
        }
        return page.slice(wallets, creationDate: \.creationDate, id: \.id)
    }
}
