public import VaultCrypto

// Public ways to make the store reports, for the other record store backends (VaultStorePostgres); the
// memberwise initialisers stay internal to this module.

extension VerifyFailure {
    public static func record(collection: String, id: String, reason: String) -> VerifyFailure {
        VerifyFailure(collection: collection, id: id, reason: reason)
    }
}

extension VerifyReport {
    public static func of(checked: Int, failures: [VerifyFailure], damage: [String]) -> VerifyReport {
        VerifyReport(checked: checked, failures: failures, damage: damage)
    }
}

extension DataKeyStatus {
    public static func of(key: DataKeyInfo, records: Int, isCurrent: Bool) -> DataKeyStatus {
        DataKeyStatus(key: key, records: records, isCurrent: isCurrent)
    }
}

extension RewrapReport {
    public static var empty: RewrapReport { RewrapReport() }
}
