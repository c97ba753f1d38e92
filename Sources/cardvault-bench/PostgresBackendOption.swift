import Foundation

/// `CARDVAULT_BENCH_DATABASE_URL=<libpq URI>`: the HTTP suites' daemon runs on the PostgreSQL backend instead of the
/// file store, each daemon home in a schema of its own (created here, then `cardvault db migrate`), with its master key
/// made by `cardvault keys init`. Unset: the file store, as always. (The http suite's durability check reopens the
/// file store and does not apply to this backend; the `postgres` suite, PostgresPairSuite, runs two daemons on one
/// database beside the file store and the pgcrypto peer and reads its durability check back from the database.)
enum PostgresBackendOption {
    static let variable = "CARDVAULT_BENCH_DATABASE_URL"

    /// The extra environment of a daemon in `home`, or none when the variable is unset.
    static func environment(home: String, binary: String) throws -> [String: String] {
        guard let base = ProcessInfo.processInfo.environment[variable], !base.isEmpty else { return [:] }
        // One schema per daemon home, so a restart on the same home finds its data again.
        let schema =
            "bench_"
            + String(home.unicodeScalars.filter { CharacterSet.alphanumerics.contains($0) }.suffix(40))
            .lowercased()
        try ChildProcess.check(
            "/usr/lib/postgresql/15/bin/psql",
            ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", base, "-c", "CREATE SCHEMA IF NOT EXISTS \(schema)"])
        let url = base + (base.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"
        let environment = ["CARDVAULT_DATABASE_URL": url, "CARDVAULT_KEYS_DIR": home + "/keys"]
        if !FileManager.default.fileExists(atPath: home + "/keys/master.key") {
            try ChildProcess.check(binary, ["keys", "init", "--keys-dir", home + "/keys"], environment: environment)
        }
        try ChildProcess.check(binary, ["db", "migrate"], environment: environment)
        return environment
    }
}
