import VaultStore

/// Maps store failures to the API's errors: `unavailable` stays visible (503); others are unexpected.
@discardableResult
func mapStoreErrors<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as StoreError where error.code == .unavailable {
        throw PaymentsError(.unavailable, "The service cannot store data right now; retry later")
    }
}
