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

extension PaymentsError {
    /// The API's error for a store failure that is a damaged record (``StoreError/Code/corrupted``), else nil.
    /// The message names no record: the operator's log (``damagedRecordDetail(_:)``) and `cardvault verify` do.
    public static func damagedRecord(from error: any Error) -> PaymentsError? {
        guard let error = error as? StoreError, error.code == .corrupted else { return nil }
        return PaymentsError(
            .damagedRecord,
            "A stored record this request needs is damaged and cannot be read; nothing was changed. "
                + "The vault's operator can name it with `cardvault verify` (quote this error's Id)")
    }
}

extension PaymentsError {
    /// The store's own message about a damaged record (collection and id, never a value), for the operator's log.
    public static func damagedRecordDetail(_ error: any Error) -> String { (error as? StoreError)?.message ?? "" }
}
