public import VaultCrypto

/// The custody record in PostgreSQL (`cardvault_custody`), shared by every daemon of the database: a sealed daemon
/// reads it before it has any key, so no host needs a copy of anything.
public struct PostgresCustodyRecords: CustodyRecords {
    private let uri: String

    /// - Parameter uri: the libpq connection string of the database.
    public init(uri: String) {
        self.uri = uri
    }

    public func read() throws -> KeyCustody? {
        let connection = try PostgresConnection(uri: uri, applicationName: "cardvault-custody")
        try PostgresSchema.check(on: connection)
        let rows = try connection.execute("SELECT document FROM cardvault_custody")
        guard let document = rows.rows.first?[0] else { return nil }
        return try KeyCustody.decode(document, source: "the database's custody record")
    }

    public func write(_ custody: KeyCustody) throws {
        let connection = try PostgresConnection(uri: uri, applicationName: "cardvault-custody")
        try PostgresSchema.check(on: connection)
        try connection.prepare(
            "cv_custody_write",
            """
            INSERT INTO cardvault_custody (singleton, document) VALUES (true, $1)
            ON CONFLICT (singleton) DO UPDATE SET document = EXCLUDED.document
            """)
        _ = try connection.run("cv_custody_write", [.text(String(decoding: try custody.encoded(), as: UTF8.self))])
    }
}
