import VaultStore

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
