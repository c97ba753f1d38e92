import Dispatch
import Foundation
import Payments
import VaultCore
import VaultStore
import VaultStorePostgres

/// `postgres`: the tokenization POST and the direct pay-in through two daemons sharing one PostgreSQL 15
/// database (a throw-away cluster, fsync and synchronous_commit on), in the same run as one daemon on the
/// encrypted file store and the PostgreSQL + pgcrypto peer (pgbench). The load is split over both daemons
/// (half the connections each, two wrk processes at once); registrations are created through daemon A
/// only, so half the tokenizations land on the daemon that did not create their registration. The pair's tokenization
/// runs against the peer twice: with wrk's one thread per connection (64), and with one wrk thread per daemon, two
/// load-generator threads as pgbench -j2 has.
struct PostgresPairSuite: BenchSuite {
    let name = "postgres"
    let title = "two daemons on one PostgreSQL database vs the file store vs PostgreSQL + pgcrypto, 64 conns"

    static let connections = 64
    static let database = "cardvault"

    func run(in context: SuiteContext, notes: inout [String]) throws -> [Comparison] {
        guard CardVaultServer.canServe(in: context) else { return [] }
        let cluster: PostgresCluster
        do {
            cluster = try PostgresCluster(context: context, schema: context.benchDirectory + "/peer/schema.sql")
        } catch {
            notes.append("PostgreSQL did not start: \(error)")
            return []
        }
        defer { cluster.stop() }
        context.progress.step("\(context.suiteName) › starting the file-store daemon and two PostgreSQL daemons")
        let pair = try DaemonPair(context: context, cluster: cluster)
        defer { pair.stop() }
        let file = try CardVaultServer(context: context)
        defer { file.stop() }
        let fileSetup = try MerchantSetup(server: file, context: context, shoppers: Self.connections)
        let pairSetup = try MerchantSetup(server: pair.a, context: context, shoppers: Self.connections)
        notes.append(
            "Database: PostgreSQL 15 in a temporary cluster (\(cluster.directory)), Unix socket, fsync on, "
                + "synchronous_commit on (an answer means the commit is in the WAL on disk), "
                + "\(pair.settingsNote). Daemons A and B: `cardvault serve` (release) with databaseURL on the one "
                + "database, database.poolSize \(pair.poolSize), one key-encryption key file copied to both "
                + "(`cardvault keys init`, then `cardvault db migrate`). File store: one daemon as in the http suite."
        )
        let wrk = context.benchDirectory + "/wrk"
        var comparisons: [Comparison] = []

        // Tokenization: two daemons vs the file store, then vs the pgcrypto peer.
        let cpu = PairCPU(pair: pair, cluster: cluster)
        let pairTokenize = PairTokenization(pair: pair, setup: pairSetup, context: context, cpu: cpu)
        let fileTokenize = TokenizationRuns()
        let pairSide = Side.measured(
            Workload(label: "two daemons on PostgreSQL, tokenization POST") { try pairTokenize.run(seconds: $0) })
        let fileSide = Side.measured(
            Workload(label: "one daemon on the file store, tokenization POST") { seconds in
                try fileTokenize.run(
                    seconds: seconds, server: file, setup: fileSetup, connections: Self.connections, context: context)
            })
        var versusFile = context.compare(
            "tokenization POST, PostgreSQL pair vs file store, \(Self.connections) conns", unit: "req/s",
            subject: pairSide, anchor: fileSide, plan: context.loadPlan,
            note: "registrations created beforehand through daemon A (untimed); only acknowledged tokenizations "
                + "(200 data=) count; p99 of the pair: the worse of the two daemons' p99")
        let p99 = versusFile.subject?.latency?.p99Micros
        versusFile.target = Target(
            goal: "≥ 0.5x file store, p99 < 20 ms",
            met: versusFile.ratio.flatMap { ratio in p99.map { ratio >= 0.5 && $0 < 20_000 } })
        comparisons.append(versusFile)

        let peerKey = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let peer = PgbenchLoad(
            cluster: cluster, script: context.benchDirectory + "/peer/tokenize.sql", clients: Self.connections,
            variables: ["fkey": peerKey, "dkey": String(peerKey.reversed())])
        let peerSide = Side.measured(
            Workload(label: "PostgreSQL + pgcrypto (pgbench)") { seconds in
                try cpu.measurePeer(seconds: seconds) { try peer.run(seconds: seconds) }
            })
        let peerNote =
            "the peer does the token, HMAC fingerprint, pgp_sym_encrypt and INSERT in the same cluster, "
            + "with no HTTP hop, registration check or profiling record"
        let versusPeer = context.compare(
            "tokenization POST, PostgreSQL pair vs PostgreSQL + pgcrypto, \(Self.connections) conns",
            unit: "req/s", subject: pairSide, anchor: peerSide, plan: context.loadPlan,
            target: { Target(goal: "≥ 1x peer", met: $0.ratio.map { $0 >= 1 }) },
            note: peerNote + "; wrk runs one thread per connection (64 threads), pgbench -j2 runs two")
        comparisons.append(versusPeer)
        // The same with the generators alike: two load threads on each side (wrk -t1 -c32 per daemon, pgbench -j2).
        let versusPeerShared =
            context.compare(
                "tokenization POST, PostgreSQL pair (wrk -t1 per daemon) vs PostgreSQL + pgcrypto, "
                    + "\(Self.connections) conns",
                unit: "req/s",
                subject: .measured(
                    Workload(label: "two daemons on PostgreSQL, tokenization POST, one wrk thread each") {
                        try pairTokenize.run(seconds: $0, shared: true)
                    }),
                anchor: peerSide, plan: context.loadPlan,
                target: { Target(goal: "≥ 1x peer", met: $0.ratio.map { $0 >= 1 }) },
                note: peerNote + "; two load-generator threads on each side (tokenize-shared.lua: answers counted, "
                    + "not matched to registrations, so the durability check stays with the one-thread-per-connection "
                    + "runs)")
        comparisons.append(versusPeerShared)

        notes.append(cpu.note)
        if let ceiling = cpu.ceilingNote(peerRates: (versusPeer.anchor?.median, versusPeerShared.anchor?.median)) {
            notes.append(ceiling)
        }

        // Pay-in: two daemons vs the file store.
        let half = Self.connections / 2
        let shoppers = pairSetup.shoppers.map { "\($0.user)\t\($0.wallet)\t\($0.card)\n" }
        let shoppersA = try context.temporaryDirectory("pair-shoppers") + "/a.tsv"
        let shoppersB = shoppersA.replacingOccurrences(of: "/a.tsv", with: "/b.tsv")
        try shoppers.prefix(half).joined().write(toFile: shoppersA, atomically: false, encoding: .utf8)
        try shoppers.suffix(Self.connections - half).joined().write(
            toFile: shoppersB, atomically: false, encoding: .utf8)
        let pairPayIn = [(pair.a, shoppersA), (pair.b, shoppersB)].map { server, list in
            WrkLoad(
                url: server.url, script: wrk + "/payin.lua", connections: half,
                scriptArguments: [pairSetup.session.clientId, pairSetup.session.token, list], threadPerConnection: true)
        }
        let filePayIn = WrkLoad(
            url: file.url, script: wrk + "/payin.lua", connections: Self.connections,
            scriptArguments: [fileSetup.session.clientId, fileSetup.session.token, fileSetup.shoppersFile],
            threadPerConnection: true)
        comparisons.append(
            context.compare(
                "pay-in (frictionless), PostgreSQL pair vs file store, \(Self.connections) conns", unit: "pay-ins/s",
                subject: .measured(
                    Workload(label: "two daemons on PostgreSQL, direct pay-in") { seconds in
                        try PairTokenization.combine(try runTogether(pairPayIn, seconds: seconds))
                    }),
                anchor: .measured(
                    Workload(label: "one daemon on the file store, direct pay-in") { seconds in
                        try PairTokenization.combine([try filePayIn.runReporting(seconds: seconds)])
                    }),
                plan: context.loadPlan,
                note: "POST /payins/card/direct, one shopper per connection; the pair's shoppers split over A and B; "
                    + "only SUCCEEDED pay-ins count"))

        // Durability: SIGKILL both daemons, read every acknowledged tokenization back from the database.
        if let last = pairTokenize.last {
            context.progress.step("\(context.suiteName) › durability: SIGKILL both daemons, read the database back")
            pair.a.crash()
            pair.b.crash()
            do {
                let missing = try pair.missing(last)
                notes.append(
                    "Durability: after the last pair tokenization run both daemons were killed with SIGKILL; "
                        + "reading the database back (a third store over the same database and key file) found "
                        + "\(last.acknowledged.count - missing) of the run's \(last.acknowledged.count) acknowledged "
                        + "tokenizations with their registration and vaulted card number"
                        + (missing == 0 ? ": every acknowledged card is durable." : "; \(missing) MISSING."))
                if missing > 0 { comparisons[0].target?.met = false }
            } catch {
                notes.append("Durability check failed to run: \(error)")
                comparisons[0].target?.met = false
            }
        }
        return comparisons
    }
}

/// Runs `loads` at the same time (one wrk process each) and returns their samples and reports.
func runTogether(_ loads: [WrkLoad], seconds: Double) throws -> [(sample: Sample, report: WrkLoad.Report)] {
    let results = Locked<[Int: Result<(sample: Sample, report: WrkLoad.Report), any Error>]>([:])
    DispatchQueue.concurrentPerform(iterations: loads.count) { index in
        let result = Result { try loads[index].runReporting(seconds: seconds) }
        results.withLock { $0[index] = result }
    }
    return try (0..<loads.count).map { index in try results.withLock { $0[index]! }.get() }
}

/// Daemons A and B on one database of a ``PostgresCluster``, sharing a key-encryption key file.
final class DaemonPair {
    let a: CardVaultServer
    let b: CardVaultServer
    let uri: String
    let keysDirectory: String
    let poolSize: Int
    let settingsNote: String

    init(context: SuiteContext, cluster: PostgresCluster) throws {
        let psql = PostgresCluster.binaries + "/psql"
        let admin = ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", cluster.directory, "-p", String(cluster.port), "-U"]
        try ChildProcess.check(psql, admin + ["postgres", "-d", "postgres", "-c", "CREATE DATABASE cardvault"])
        uri =
            "postgresql:///\(PostgresPairSuite.database)?host=\(cluster.directory)&port=\(cluster.port)&user=postgres"
        settingsNote = "max_connections 100, shared_buffers 256MB"
        poolSize =
            Int(ProcessInfo.processInfo.environment["CARDVAULT_BENCH_POOL_SIZE"] ?? "")
            ?? PostgresStoreOptions.defaultPoolSize
        keysDirectory = try context.temporaryDirectory("pair-keys")
        let binary = CardVaultServer.binary(in: context)
        let environment = [
            "CARDVAULT_DATABASE_URL": uri, "CARDVAULT_KEYS_DIR": keysDirectory,
            "CARDVAULT_DATABASE_POOL_SIZE": String(poolSize),
        ]
        try ChildProcess.check(binary, ["keys", "init", "--keys-dir", keysDirectory], environment: environment)
        try ChildProcess.check(binary, ["db", "migrate"], environment: environment)
        a = try CardVaultServer(context: context, extraEnvironment: environment)
        b = try CardVaultServer(context: context, extraEnvironment: environment, sharing: a.credentials)
    }

    func stop() {
        a.stop()
        b.stop()
    }

    /// Acknowledged tokenizations of `run` whose registration (with its pending card) or vaulted card number is
    /// not in the database.
    func missing(_ run: PairTokenization.Run) throws -> Int {
        let options = PostgresStoreOptions(uri: uri, poolSize: 4)
        let keys = keysDirectory
        return try runBlocking {
            let store = try PostgresRecordStore.open(options: options, keysDirectory: keys)
            defer { store.close() }
            var missing = 0
            for id in run.acknowledged {
                // Records are binary (RecordCoding), as the file store's durability check reads them.
                guard
                    let record = try await store.get(
                        TokenizationDurabilityCheck.registrations, id: run.clientId + ":" + id),
                    let registration = try? RecordCoding.decode(CardRegistration.self, from: record),
                    let pending = registration.pending,
                    try await store.get(TokenizationDurabilityCheck.vault, id: run.clientId + ":" + pending.cardId)
                        != nil
                else {
                    missing += 1
                    continue
                }
            }
            return missing
        }
    }
}

/// The pair's tokenization runs: registrations created through A (create.lua, untimed, 2.5 times the
/// expected use), dealt into one file per connection, the first half posted to A and the second to B.
final class PairTokenization {
    struct Run {
        var acknowledged: [String]
        var clientId: String
    }

    let pair: DaemonPair
    let setup: MerchantSetup
    let context: SuiteContext
    private(set) var last: Run?
    private var expectedRate = 3_000.0

    let cpu: PairCPU

    init(pair: DaemonPair, setup: MerchantSetup, context: SuiteContext, cpu: PairCPU) {
        self.pair = pair
        self.setup = setup
        self.context = context
        self.cpu = cpu
    }

    /// One run. `shared`: one wrk thread per daemon for its 32 connections (tokenize-shared.lua), two generator
    /// threads in all as pgbench -j2 has, instead of one thread per connection; such a run counts acknowledged
    /// answers only, so the durability check keeps to the other runs.
    func run(seconds: Double, shared: Bool = false) throws -> Sample {
        let connections = PostgresPairSuite.connections
        let half = connections / 2
        let wanted = Int(expectedRate * 2.5 * max(1, seconds.rounded())) + 16 * connections
        let directory = try createRegistrations(wanted, connections: connections)
        var loads: [WrkLoad] = []
        for (index, server) in [pair.a, pair.b].enumerated() {
            let part = directory + "/\(index == 0 ? "a" : "b")"
            try FileManager.default.createDirectory(atPath: part, withIntermediateDirectories: true)
            if shared {
                // The half's registrations in one slice, for the daemon's one wrk thread.
                let lines = try (0..<half).map {
                    try String(contentsOfFile: directory + "/slice-\(index * half + $0)", encoding: .utf8)
                }
                try lines.joined().write(toFile: part + "/slice-0", atomically: false, encoding: .utf8)
            } else {
                for slice in 0..<half {
                    try FileManager.default.createSymbolicLink(
                        atPath: part + "/slice-\(slice)",
                        withDestinationPath: directory + "/slice-\(index * half + slice)")
                }
            }
            loads.append(
                WrkLoad(
                    url: server.url,
                    script: context.benchDirectory + (shared ? "/wrk/tokenize-shared.lua" : "/wrk/tokenize.lua"),
                    connections: half, scriptArguments: [part], threadPerConnection: !shared,
                    threadCount: shared ? 1 : nil))
        }
        let results = try cpu.measurePair(shared: shared) { try runTogether(loads, seconds: seconds) }
        if shared {
            let sample = try Self.combine(results)
            expectedRate = max(expectedRate, sample.rate)
            return sample
        }
        var acknowledged: [String] = []
        for (index, result) in results.enumerated() {
            for thread in result.report.threads ?? [] {
                let text = try String(
                    contentsOfFile: directory + "/slice-\(index * half + thread.slice)", encoding: .utf8)
                let slice = text.split(separator: "\n").compactMap { $0.split(separator: "\t").first.map(String.init) }
                let gaps = Set(thread.gaps.split(separator: ",").compactMap { Int($0) })
                for position in stride(from: 1, through: thread.last, by: 1) where !gaps.contains(position) {
                    acknowledged.append(slice[position - 1])
                }
            }
        }
        last = Run(acknowledged: acknowledged, clientId: setup.session.clientId)
        let sample = try Self.combine(results)
        expectedRate = max(expectedRate, sample.rate)
        return sample
    }

    /// One sample of loads run together: completed answers per second summed, the worse latency curve (by p99).
    static func combine(_ results: [(sample: Sample, report: WrkLoad.Report)]) throws -> Sample {
        guard var combined = results.first?.sample else { throw BenchFailure("no load ran") }
        combined.rate = results.reduce(0) { $0 + Double($1.report.completed ?? 0) / ($1.report.duration_us / 1e6) }
        combined.errors = results.reduce(0) { $0 + $1.sample.errors }
        combined.generatorCores = results.compactMap(\.sample.generatorCores).reduce(0, +)
        combined.latency =
            results.compactMap(\.sample.latency).max { $0.p99Micros < $1.p99Micros }
        return combined
    }

    /// Creates at least `count` registrations through A; returns the directory of `slice-<i>` files.
    private func createRegistrations(_ count: Int, connections: Int) throws -> String {
        let directory = try context.temporaryDirectory("pair-registrations")
        var lines: [Substring] = []
        var round = 0
        while lines.count < count {
            let roundDirectory = directory + "/round-\(round)"
            try FileManager.default.createDirectory(atPath: roundDirectory, withIntermediateDirectories: true)
            let creation = WrkLoad(
                url: pair.a.url, script: context.benchDirectory + "/wrk/create.lua", connections: connections,
                scriptArguments: [setup.session.clientId, setup.session.token, setup.shoppers[0].user, roundDirectory])
            _ = try creation.runReporting(seconds: max(1, (Double(count - lines.count) / 1_500).rounded(.up)))
            for file in try FileManager.default.contentsOfDirectory(atPath: roundDirectory).sorted()
            where file.hasPrefix("registrations-") {
                lines += try String(contentsOfFile: roundDirectory + "/" + file, encoding: .utf8).split(separator: "\n")
            }
            round += 1
            if round > 20 { throw BenchFailure("cannot create \(count) registrations (have \(lines.count))") }
        }
        var slices = [[Substring]](repeating: [], count: connections)
        for (index, line) in lines.enumerated() { slices[index % connections].append(line) }
        for (slice, part) in slices.enumerated() {
            try (part.joined(separator: "\n") + "\n").write(
                toFile: directory + "/slice-\(slice)", atomically: false, encoding: .utf8)
        }
        return directory
    }
}

/// CPU charged to each tokenization of the timed pair runs (daemons A + B, the PostgreSQL server's processes,
/// the two wrk processes) and to each insert of the pgcrypto peer (server, pgbench): per-request CPU is the
/// stable measure on a shared host, where rates move with other programs' load.
final class PairCPU {
    struct Split {
        var daemons = 0.0
        var database = 0.0
        var generator = 0.0
        /// Acknowledged tokenizations per second in the run (pair runs only).
        var rate = 0.0
    }

    let pair: DaemonPair
    let cluster: PostgresCluster
    private(set) var pairRuns: [Split] = []
    /// The pair's runs with one wrk thread per daemon (``PairTokenization/run(seconds:shared:)``).
    private(set) var sharedPairRuns: [Split] = []
    private(set) var peerRuns: [Split] = []

    init(pair: DaemonPair, cluster: PostgresCluster) {
        self.pair = pair
        self.cluster = cluster
    }

    private var daemonSeconds: Double? {
        guard let a = pair.a.cpuSeconds, let b = pair.b.cpuSeconds else { return nil }
        return a + b
    }

    /// Runs the pair's wrk loads, charging the daemons', the server's and wrk's CPU to the acknowledged tokenizations.
    func measurePair(
        shared: Bool = false, _ body: () throws -> [(sample: Sample, report: WrkLoad.Report)]
    ) rethrows -> [(sample: Sample, report: WrkLoad.Report)] {
        let daemons = daemonSeconds
        let database = cluster.cpuSeconds
        let results = try body()
        let count = results.reduce(0) { $0 + ($1.report.completed ?? 0) }
        if let daemons, let database, let daemonsAfter = daemonSeconds, let databaseAfter = cluster.cpuSeconds,
            count > 0
        {
            let generator = results.reduce(0.0) {
                $0 + ($1.sample.generatorCores ?? 0) * $1.report.duration_us / 1e6
            }
            let split =
                Split(
                    daemons: (daemonsAfter - daemons) * 1e6 / Double(count),
                    database: (databaseAfter - database) * 1e6 / Double(count),
                    generator: generator * 1e6 / Double(count),
                    rate: results.reduce(0) { $0 + Double($1.report.completed ?? 0) / ($1.report.duration_us / 1e6) })
            if shared { sharedPairRuns.append(split) } else { pairRuns.append(split) }
        }
        return results
    }

    /// Runs the peer (pgbench), charging the server's and pgbench's CPU to its inserts.
    func measurePeer(seconds: Double, _ body: () throws -> Sample) rethrows -> Sample {
        let database = cluster.cpuSeconds
        let sample = try body()
        let duration = Double(PgbenchLoad.duration(seconds))  // pgbench -T, as PgbenchLoad runs it
        let count = sample.rate * duration
        if let database, let databaseAfter = cluster.cpuSeconds, count > 0 {
            peerRuns.append(
                Split(
                    daemons: 0, database: (databaseAfter - database) * 1e6 / count,
                    generator: (sample.generatorCores ?? 0) * duration * 1e6 / count))
        }
        return sample
    }

    /// What the pair's daemons cannot change: the rate the same CPU would carry if the daemons cost nothing, each
    /// timed run's rate scaled by the CPU per tokenization of all three (daemons, PostgreSQL server, wrk) over that of
    /// the server and wrk alone (the cores are all busy in these runs), then the median; against the peer's rate in
    /// the same line, for the runs with a wrk thread per connection and those with one per daemon (`peerRates` in
    /// that order). Scaling the measured rate keeps it free of the CPU that the measuring window holds beyond wrk's timed run.
    func ceilingNote(peerRates: (perConnection: Double?, perDaemon: Double?)) -> String? {
        func ceiling(_ runs: [Split], _ peerRate: Double?, _ label: String) -> String? {
            let timed = runs.count > 1 ? Array(runs.dropFirst()) : runs
            guard let peerRate, peerRate > 0 else { return nil }
            let ceilings = timed.compactMap { run -> Double? in
                let others = run.database + run.generator
                return others > 0 && run.rate > 0 ? run.rate * (run.daemons + others) / others : nil
            }
            guard !ceilings.isEmpty else { return nil }
            let shares = timed.map { $0.daemons / ($0.daemons + $0.database + $0.generator) }
            let rate = Statistics.median(ceilings)
            return "\(label): the daemons \(Int((Statistics.median(shares) * 100).rounded()))% of the CPU, at most "
                + "\(Formatting.rate(rate))/s, \(Formatting.ratio(rate / peerRate)) the peer's "
                + "\(Formatting.rate(peerRate))/s in that line"
        }
        let parts = [
            ceiling(pairRuns, peerRates.perConnection, "wrk thread per connection"),
            ceiling(sharedPairRuns, peerRates.perDaemon, "one wrk thread per daemon"),
        ].compactMap { $0 }
        guard !parts.isEmpty else { return nil }
        return "Ceiling on this machine (what the daemons cannot change): the pair's rate if the CPU its daemons took "
            + "per tokenization went to the PostgreSQL server and wrk instead (medians of the runs): "
            + parts.joined(separator: "; ") + "."
    }

    /// Medians over the runs (the first, a warm-up, left out when there are more).
    var note: String {
        func median(_ runs: [Split], _ part: KeyPath<Split, Double>) -> String {
            let timed = runs.count > 1 ? Array(runs.dropFirst()) : runs
            guard !timed.isEmpty else { return "n/a" }
            return String(format: "%.0f", Statistics.median(timed.map { $0[keyPath: part] }))
        }
        return "CPU per request (user + system from /proc over each timed run / acknowledged requests, median): "
            + "pair tokenization: daemons A + B \(median(pairRuns, \.daemons)) µs, PostgreSQL server "
            + "\(median(pairRuns, \.database)) µs, wrk \(median(pairRuns, \.generator)) µs; pair tokenization with "
            + "one wrk thread per daemon: daemons A + B \(median(sharedPairRuns, \.daemons)) µs, PostgreSQL server "
            + "\(median(sharedPairRuns, \.database)) µs, wrk \(median(sharedPairRuns, \.generator)) µs; pgcrypto peer insert: "
            + "PostgreSQL server \(median(peerRuns, \.database)) µs, pgbench \(median(peerRuns, \.generator)) µs."
    }
}
