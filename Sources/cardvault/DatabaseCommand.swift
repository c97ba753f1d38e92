import Configuration
import Foundation
import VaultCore
import VaultStorePostgres

/// `cardvault db`: the PostgreSQL schema of the `databaseURL` backend.
enum DatabaseCommand: Command {
    static let name = "db"
    static let summary = "create or upgrade the PostgreSQL schema (databaseURL)"
    static let help = """
        usage: cardvault db migrate [--config FILE]
               cardvault db status [--config FILE]

        Works on the database named by `databaseURL` (CARDVAULT_DATABASE_URL; a libpq URI, multi-host
        allowed). `migrate` creates the schema in an empty database or upgrades an older one to this
        binary's version, in one transaction (safe to run from several hosts at once, and again).
        `serve` refuses to start on a database whose schema is missing or older. `status` prints the
        schema version found and the one this binary needs.

        options:
          --config FILE   the JSON configuration file
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        guard let action = arguments.positional() else { throw UsageError("missing action: migrate or status") }
        let explicitFile = try arguments.option("--config")
        try arguments.finish()
        let configuration = try CommandConfiguration.load(explicitFile: explicitFile)
        guard let url = configuration.databaseURL?.unsafeRevealed else {
            throw CommandFailure(
                "databaseURL is not set (CARDVAULT_DATABASE_URL); the file store needs no migration", status: 78)
        }
        do {
            switch action {
            case "migrate":
                let (from, to) = try PostgresRecordStore.migrate(uri: url)
                print(from == to ? "schema at version \(to) already" : "schema migrated from version \(from) to \(to)")
            case "status":
                let found = try PostgresRecordStore.schemaVersion(uri: url)
                print("schema version \(found); this binary needs \(PostgresSchema.currentVersion)")
                return found == PostgresSchema.currentVersion ? 0 : 1
            default:
                throw UsageError("unknown action '\(action)': migrate or status")
            }
        } catch let error as PostgresError {
            throw CommandFailure(error.message)
        }
        return 0
    }
}
