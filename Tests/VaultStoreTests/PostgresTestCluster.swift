import Foundation
import VaultStore
import VaultStorePostgres

#if canImport(Glibc)
import Glibc
#endif

/// A throw-away PostgreSQL 15 cluster for the tests: `CARDVAULT_TEST_DATABASE_URL` when `make test`
/// started one, else one started here (initdb in a temporary directory, a Unix socket only, on a free
/// port number; as the `postgres` user when the tests run as root) and stopped when the process exits.
/// Each test gets an empty schema of its own (``freshURL()``).
final class PostgresTestCluster: Sendable {
    static let binaries = "/usr/lib/postgresql/15/bin"
    static let shared: PostgresTestCluster? = try? PostgresTestCluster()

    let baseURL: String
    let directory: String?

    private init() throws {
        if let url = ProcessInfo.processInfo.environment["CARDVAULT_TEST_DATABASE_URL"], !url.isEmpty {
            baseURL = url
            directory = nil
            return
        }
        guard FileManager.default.isExecutableFile(atPath: Self.binaries + "/initdb") else {
            throw ClusterFailure("PostgreSQL 15 is not installed (apt-get install postgresql)")
        }
        var template = Array("/tmp/cv-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw ClusterFailure("mkdtemp failed") }
        let directory = String(cString: made)
        self.directory = directory
        if getuid() == 0 { try Self.check("/bin/chown", ["postgres:postgres", directory]) }
        let port = Self.freePort()
        try Self.asServerUser(
            Self.binaries + "/initdb",
            ["-D", directory + "/data", "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"])
        let settings = [
            "listen_addresses=''", "unix_socket_directories='\(directory)'", "port=\(port)", "fsync=on",
            "max_connections=200", "shared_buffers=64MB",
        ].map { "-c " + $0 }.joined(separator: " ")
        try Self.asServerUser(
            Self.binaries + "/pg_ctl",
            ["-D", directory + "/data", "-l", directory + "/server.log", "-w", "-t", "60", "-o", settings, "start"])
        baseURL = "postgresql:///postgres?host=\(directory)&port=\(port)&user=postgres"
        clusterDirectory = directory
        atexit {
            if let directory = clusterDirectory {
                _ = try? PostgresTestCluster.asServerUser(
                    PostgresTestCluster.binaries + "/pg_ctl",
                    ["-D", directory + "/data", "-m", "immediate", "-w", "stop"])
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
    }

    /// A URL whose tables live in a new, empty schema.
    func freshURL() throws -> String {
        let schema = "t_" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        try psql("CREATE SCHEMA \(schema)")
        return baseURL + (baseURL.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"
    }

    /// Runs SQL with psql against the base database.
    @discardableResult
    func psql(_ sql: String) throws -> String {
        try Self.check(
            Self.binaries + "/psql", ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", baseURL, "-c", sql])
    }

    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    @discardableResult
    static func asServerUser(_ program: String, _ arguments: [String]) throws -> String {
        if getuid() == 0 { return try check("/usr/sbin/runuser", ["-u", "postgres", "--", program] + arguments) }
        return try check(program, arguments)
    }

    /// Runs `program` (posix_spawn, reaped with waitpid: Foundation's Process can miss a child's exit), its
    /// output in a file (the server pg_ctl starts would hold a pipe open forever); throws unless it exits 0.
    @discardableResult
    static func check(_ program: String, _ arguments: [String], environment: [String: String] = [:]) throws -> String {
        let path = NSTemporaryDirectory() + "cv-pg-out-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigfillset(&defaults)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, program, &actions, &attributes, argv, envp)
        guard spawned == 0 else {
            throw ClusterFailure("cannot start \(program): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(child, &status, 0) == -1 && errno == EINTR {}
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else {
            throw ClusterFailure("\((program as NSString).lastPathComponent) failed: \(text)")
        }
        return text
    }
}

struct ClusterFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

nonisolated(unsafe) private var clusterDirectory: String?

/// A PostgreSQL store on a fresh schema of the test cluster, with a master key in a sandbox; closed on deinit.
final class PostgresSandbox: Sendable {
    let url: String
    let sandbox: StoreSandbox
    let store: ClosingPostgresStore

    init(options: (String) -> PostgresStoreOptions = { PostgresStoreOptions(uri: $0, poolSize: 4) }) throws {
        guard let cluster = PostgresTestCluster.shared else {
            throw ClusterFailure(
                "no PostgreSQL for the tests: install postgresql (Debian) or set CARDVAULT_TEST_DATABASE_URL")
        }
        url = try cluster.freshURL()
        sandbox = try StoreSandbox()
        _ = try PostgresRecordStore.migrate(uri: url)
        store = ClosingPostgresStore(try PostgresRecordStore.open(options: options(url), keysDirectory: sandbox.keys))
    }

    /// Another store (another "daemon") on the same schema and master key.
    func openAnother(_ options: PostgresStoreOptions? = nil) throws -> ClosingPostgresStore {
        ClosingPostgresStore(
            try PostgresRecordStore.open(
                options: options ?? PostgresStoreOptions(uri: url, poolSize: 4), keysDirectory: sandbox.keys))
    }
}

/// Closes its PostgreSQL store when released.
final class ClosingPostgresStore: RecordStore {
    let store: PostgresRecordStore
    init(_ store: PostgresRecordStore) { self.store = store }
    deinit { store.close() }

    func get(_ collection: String, id: String) async throws -> Record? { try await store.get(collection, id: id) }
    func commit(_ writes: [RecordWrite]) async throws -> [UInt64] { try await store.commit(writes) }
    func scan(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> [Record] {
        try await store.scan(collection, prefix: prefix, after: after, limit: limit)
    }
    func count(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> Int {
        try await store.count(collection, prefix: prefix, after: after, limit: limit)
    }
}
