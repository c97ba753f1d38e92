import Foundation

/// `http`: CardVault's merchant API over loopback at 1, 16 and 64 keep-alive connections, driven by
/// wrk with the bench's Lua scripts, against nginx serving a fixed 64-byte body in the same run:
/// the card registration flow end to end, direct pay-ins, and the tokenization POST alone (64
/// connections, with a crash-and-recover durability check of every acknowledged card).
struct HTTPSuite: BenchSuite {
    let name = "http"
    let title = "merchant API over loopback vs nginx (64-byte body), wrk keep-alive at 1/16/64 connections"

    static let connectionCounts = [1, 16, 64]
    /// Connections of the tokenization-only line (the issue's target).
    static let tokenizationConnections = 64

    func run(in context: SuiteContext, notes: inout [String]) throws -> [Comparison] {
        let nginx: NginxAnchor
        do {
            nginx = try NginxAnchor(context: context)
        } catch {
            notes.append("nginx did not start: \(error)")
            return []
        }
        defer { nginx.stop() }
        notes.append("Anchor: \(nginx.version), worker_processes auto, access_log off, on 127.0.0.1:\(nginx.port).")
        var server: CardVaultServer?
        var serverNote = subjectNotBuilt
        var setup: MerchantSetup?
        if CardVaultServer.canServe(in: context) {
            do {
                context.progress.step("\(context.suiteName) › starting cardvault serve")
                let started = try CardVaultServer(context: context)
                server = started
                context.progress.step("\(context.suiteName) › creating shoppers, wallets and cards")
                setup = try MerchantSetup(server: started, context: context, shoppers: Self.connectionCounts.max()!)
                notes.append(
                    "Subject: `cardvault serve` (release build) on 127.0.0.1:\(started.port), fresh data and keys "
                        + "directories (the encrypted file store; every write fsynced before it is acknowledged). "
                        + "Benchmark settings through documented configuration fields: logLevel warn (nginx runs "
                        + "without an access log); tokenizationsPerMinutePerAddress 100000000 instead of 60 and "
                        + "http.maxConnectionsPerAddress 512 instead of 64 (all load comes from 127.0.0.1); "
                        + "riskFile raising maxPerCard/User/IP/Device and cardsPerDevice* to 1e9 (the pay-in "
                        + "load repeats pay-ins on the same cards far beyond the default velocity rules, which "
                        + "would turn them into challenges).")
            } catch {
                serverNote = "failed to start: \(error)"
            }
        }
        defer { server?.stop() }
        let wrkDirectory = context.benchDirectory + "/wrk"
        let get = wrkDirectory + "/get.lua"
        var comparisons: [Comparison] = []
        var generator: [String] = []
        var flowRates: [String] = []
        var refusedSamples: [String] = []
        var cpuLines: [(name: String, cpu: CPUPerRequest, warmup: Bool)] = []
        for connections in Self.connectionCounts {
            let label = "\(connections) conn\(connections == 1 ? "" : "s")"
            let nginxLoad = WrkLoad(
                url: nginx.url + "/", script: get, connections: connections, threadPerConnection: true)
            let anchor = Side.measured(Workload(label: "nginx, 64-byte body") { try nginxLoad.run(seconds: $0) })
            var flowSide = Side.unavailable(serverNote)
            let flowCounts = CompletedCounter()
            let flowCPU = CPUPerRequest()
            cpuLines.append(("registration flow, \(label)", flowCPU, true))
            if let server, let setup {
                let load = WrkLoad(
                    url: server.url, script: wrkDirectory + "/flow.lua", connections: connections,
                    scriptArguments: [setup.session.clientId, setup.session.token, setup.shoppers[0].user],
                    threadPerConnection: true)
                let counter = flowCounts
                flowSide = .measured(
                    Workload(label: "cardvault serve, registration flow") { seconds in
                        let (sample, report) = try flowCPU.measure(server, requests: \.1.requests) {
                            try load.runReporting(seconds: seconds)
                        }
                        counter.add(report.completed ?? 0, seconds: report.duration_us / 1e6)
                        if (report.refused ?? 0) > 0 { counter.refusal = "flow: \(report.refused!) refused" }
                        return sample
                    })
            }
            let flow = context.compare(
                "card registration flow, \(label)", unit: "req/s", subject: flowSide, anchor: anchor,
                plan: context.loadPlan,
                note: "4 requests per flow (create registration, tokenization POST, update, read card); rate and "
                    + "latency per request; wrk -t\(connections) -c\(connections) on both sides")
            comparisons.append(flow)
            if let flowsPerSecond = flowCounts.medianRate {
                flowRates.append("\(label): \(Formatting.rate(flowsPerSecond)) flows/s")
            }
            if let refusal = flowCounts.refusal { refusedSamples.append("\(label) \(refusal)") }
            generator.append(generatorText(flow, label: label, threads: connections))

            var payIn = Comparison(name: "pay-in (frictionless), \(label)", unit: "pay-ins/s", subjectNote: serverNote)
            payIn.note =
                "POST /payins/card/direct, 10.00 EUR with the frictionless sandbox card, one shopper (user, "
                + "wallet, card, IP) per connection; only SUCCEEDED pay-ins count; anchor: nginx from the flow line"
            if let server, let setup {
                let load = WrkLoad(
                    url: server.url, script: wrkDirectory + "/payin.lua", connections: connections,
                    scriptArguments: [setup.session.clientId, setup.session.token, setup.shoppersFile],
                    threadPerConnection: true)
                let plan = context.loadPlan
                var samples: [Sample] = []
                let payInCPU = CPUPerRequest()
                cpuLines.append(("pay-in (frictionless), \(label)", payInCPU, false))
                do {
                    context.progress.step("\(context.suiteName) › pay-in, \(label) › warm-up")
                    _ = try load.runReporting(seconds: plan.warmupSeconds)
                    for run in 0..<plan.runs {
                        context.progress.step("\(context.suiteName) › pay-in, \(label) › run \(run + 1)/\(plan.runs)")
                        let (sample, report) = try payInCPU.measure(server, requests: \.1.requests) {
                            try load.runReporting(seconds: plan.seconds)
                        }
                        var counted = sample
                        counted.rate = Double(report.completed ?? 0) / (report.duration_us / 1e6)
                        samples.append(counted)
                        if (report.refused ?? 0) > 0, let text = report.sample {
                            refusedSamples.append(
                                "pay-in \(label): \(report.refused!) refused, e.g. \(text.prefix(160))")
                        }
                    }
                    payIn.subject = Series(label: "cardvault serve, direct pay-in", samples: samples)
                    payIn.subjectNote = nil
                } catch {
                    payIn.subjectNote = "failed: \(error)"
                }
            }
            payIn.anchor = flow.anchor
            payIn.anchorNote = flow.anchorNote
            if let subject = payIn.subject, let anchor = payIn.anchor, anchor.median > 0 {
                payIn.ratio = subject.median / anchor.median
            }
            comparisons.append(payIn)
        }

        var oneWalletNote: String?
        if let server, let setup,
            let distinct = comparisons.last(where: { $0.name == "pay-in (frictionless), 64 conns" })?.subject
        {
            let (comparison, note) = oneWallet(server: server, setup: setup, distinct: distinct, context: context)
            comparisons.append(comparison)
            oneWalletNote = note
        }

        // The tokenization POST at 16 connections, with one wrk thread per connection and with wrk -t2.
        for shared in [false, true] {
            let runs = TokenizationRuns()
            let nginxLoad = WrkLoad(url: nginx.url + "/", script: get, connections: 16, threadPerConnection: !shared)
            let threads = nginxLoad.threads
            var side = Side.unavailable(serverNote)
            if let server, let setup {
                side = .measured(
                    Workload(label: "cardvault serve, tokenization POST") { seconds in
                        try runs.run(
                            seconds: seconds, server: server, setup: setup, connections: 16, context: context,
                            shared: shared)
                    })
            }
            let line = context.compare(
                "tokenization POST alone, 16 conns, wrk -t\(threads)", unit: "req/s", subject: side,
                anchor: .measured(Workload(label: "nginx, 64-byte body") { try nginxLoad.run(seconds: $0) }),
                plan: context.loadPlan,
                note: "only acknowledged tokenizations count; wrk -t\(threads) -c16 on both sides"
                    + (shared
                        ? " (several connections per wrk thread, tokenize-shared.lua)" : " (one thread per connection)")
            )
            comparisons.append(line)
            cpuLines.append(("tokenization POST alone, 16 conns, wrk -t\(threads)", runs.cpu, true))
        }

        comparisons.append(custodyLine(server: server, setup: setup, serverNote: serverNote, context: context))

        let connections = Self.tokenizationConnections
        let label = "\(connections) conns"
        let nginxLoad = WrkLoad(url: nginx.url + "/", script: get, connections: connections, threadPerConnection: true)
        // Before the tokenization line, whose durability check kills the daemon.
        let floor = floorLine(server: server, serverNote: serverNote, nginxLoad: nginxLoad, context: context)
        comparisons.append(floor.comparison)
        cpuLines.append(("HTTP floor: CORS preflight, \(label)", floor.cpu, true))
        var tokenizeSide = Side.unavailable(serverNote)
        let tokenization = TokenizationRuns()
        let tokenizeCPU = tokenization.cpu
        cpuLines.append(("tokenization POST alone, \(label)", tokenizeCPU, true))
        if let server, let setup {
            tokenizeSide = .measured(
                Workload(label: "cardvault serve, tokenization POST") { seconds in
                    try tokenization.run(
                        seconds: seconds, server: server, setup: setup, connections: connections, context: context)
                })
        }
        var tokenize = context.compare(
            "tokenization POST alone, \(label)", unit: "req/s", subject: tokenizeSide,
            anchor: .measured(Workload(label: "nginx, 64-byte body") { try nginxLoad.run(seconds: $0) }),
            plan: context.loadPlan,
            note: "registrations created beforehand (create.lua, untimed); only acknowledged tokenizations "
                + "(200 data=) count; wrk -t\(connections) -c\(connections) on both sides")
        generator.append(generatorText(tokenize, label: label + " (tokenization)", threads: connections))
        var durable: Bool?
        if let server, tokenize.subject != nil, let last = tokenization.last {
            context.progress.step("\(context.suiteName) › durability: SIGKILL the daemon, reopen its store")
            server.crash()
            do {
                let check = try TokenizationDurabilityCheck.verify(last, server: server)
                durable = check.missing == 0
                notes.append(check.summary)
            } catch {
                durable = false
                notes.append("Durability check failed to run: \(error)")
            }
        }
        let p99 = tokenize.subject?.latency?.p99Micros
        tokenize.target = Target(
            goal: "≥ 0.5x nginx, p99 < 5 ms, acknowledged cards durable",
            met: tokenize.ratio.flatMap { ratio in
                p99.flatMap { p99 in durable.map { ratio >= 0.5 && p99 < 5000 && $0 } }
            })
        comparisons.append(tokenize)
        if let note = floorNote(
            floor: floor.comparison, floorCPU: floor.cpu, tokenize: tokenize, tokenizeCPU: tokenizeCPU)
        {
            notes.append(note)
        }
        comparisons.append(peerLine(tokenize, context: context, notes: &notes))
        if let registrations = tokenization.registrationsNote { notes.append(registrations) }
        if context.options.profile {
            if tokenization.profileFrames.isEmpty {
                notes.append("Profile: none recorded (perf missing or the tokenization runs failed).")
            } else {
                let text = tokenization.profileFrames.joined(separator: "\n    ")
                notes.append(
                    "Profile of the daemon during the last tokenization run (perf record -e cpu-clock -g -p, self "
                        + "time by library and symbol):\n    " + text)
                print("\nTop frames of the daemon during the tokenization POST (self time):\n    " + text)
            }
        }

        for line in cpuLines {
            var comparison = Comparison(name: "daemon CPU per request: " + line.name, unit: "CPU µs/req")
            if let median = line.cpu.median(droppingWarmup: line.warmup) {
                let timed =
                    line.warmup && line.cpu.micros.count > 1 ? Array(line.cpu.micros.dropFirst()) : line.cpu.micros
                comparison.subject = Series(
                    label: "cardvault serve, user + system CPU / requests answered",
                    samples: timed.map { Sample(rate: $0) })
                comparison.subject?.median = median
            } else {
                comparison.subjectNote = serverNote
            }
            comparison.anchorNote = "none (CPU time)"
            comparison.note =
                "the daemon's user + system CPU (/proc/<pid>/stat) over each timed run divided by the "
                + "requests answered; lower is better, and stable on a noisy machine where rates are not"
            comparisons.append(comparison)
        }
        notes.append(CPUPerRequest.threadNote(cpuLines))
        if let oneWalletNote { notes.append(oneWalletNote) }
        if !flowRates.isEmpty {
            notes.append("Registration flows completed: " + flowRates.joined(separator: "; ") + ".")
        }
        if !refusedSamples.isEmpty { notes.append("Refused answers: " + refusedSamples.joined(separator: "; ") + ".") }
        notes.append(
            "Load generator: wrk runs one thread per connection on both sides (the flow and tokenization scripts "
                + "follow each connection's state), so nginx is measured with exactly the generator set-up the "
                + "subject gets; nginx's rate is what that wrk set-up can deliver on this machine. wrk CPU (user + "
                + "system / wall, in cores): " + generator.joined(separator: "; ") + ".")
        return comparisons
    }

    /// The floor under every route answered on the Swift pool: a CORS preflight (OPTIONS on the tokenization path, no
    /// Origin: 204, nothing read or written) at the tokenization line's connections and wrk set-up, against nginx.
    /// It costs what every such request costs before its own work (the request's suspension, the hop to the pool,
    /// the resume and the answer), so no route of the kind, the tokenization included, reaches a higher ratio.
    private func floorLine(
        server: CardVaultServer?, serverNote: String, nginxLoad: WrkLoad, context: SuiteContext
    ) -> (comparison: Comparison, cpu: CPUPerRequest) {
        let cpu = CPUPerRequest()
        var side = Side.unavailable(serverNote)
        if let server {
            let load = WrkLoad(
                url: server.url, script: context.benchDirectory + "/wrk/preflight.lua",
                connections: nginxLoad.connections, threadPerConnection: true)
            side = .measured(
                Workload(label: "cardvault serve, OPTIONS preflight (204)") { seconds in
                    try cpu.measure(server, requests: \.1.requests) { try load.runReporting(seconds: seconds) }.sample
                })
        }
        let comparison = context.compare(
            "HTTP floor: CORS preflight on the Swift pool, \(nginxLoad.connections) conns", unit: "req/s",
            subject: side,
            anchor: .measured(Workload(label: "nginx, 64-byte body") { try nginxLoad.run(seconds: $0) }),
            plan: context.loadPlan,
            note: "OPTIONS /tokenize/…/… without an Origin (204): what every route on the Swift pool costs before its "
                + "own work (suspension, hop, resume, answer), so the ceiling of the tokenization's ratio to nginx; "
                + "wrk -t\(nginxLoad.threads) -c\(nginxLoad.connections) on both sides")
        return (comparison, cpu)
    }

    /// The tokenization line beside the floor: ratios to nginx and daemon CPU per request, both measured in this run.
    private func floorNote(
        floor: Comparison, floorCPU: CPUPerRequest, tokenize: Comparison, tokenizeCPU: CPUPerRequest
    ) -> String? {
        guard let floorRatio = floor.ratio, let ratio = tokenize.ratio,
            let floorMicros = floorCPU.median(droppingWarmup: true),
            let micros = tokenizeCPU.median(droppingWarmup: true)
        else { return nil }
        return "HTTP floor: the CORS preflight, which does nothing past the HTTP layer and the hop to the Swift pool, "
            + "ran at \(Formatting.ratio(floorRatio)) nginx with \(Formatting.micros(floorMicros)) of daemon "
            + "CPU per request; the tokenization POST at the same connections, at "
            + "\(Formatting.ratio(ratio)) with \(Formatting.micros(micros)) (its handler, the store's seal, "
            + "write and fsync on top of the floor)."
    }

    /// The HTTP tokenization line (subject as measured above) against PostgreSQL + pgcrypto doing tokenize-and-store
    /// over its own protocol at the same 64 connections (pgbench, the peer suite's script), measured in this run.
    private func peerLine(_ tokenize: Comparison, context: SuiteContext, notes: inout [String]) -> Comparison {
        let clients = Self.tokenizationConnections
        var comparison = Comparison(
            name: "tokenization POST over HTTP vs PostgreSQL + pgcrypto, 64 conns", unit: "cards/s",
            subject: tokenize.subject, subjectNote: tokenize.subjectNote)
        comparison.note =
            "subject: the tokenization line above (HTTP, registration check, profiling record, fsync); "
            + "anchor: pgbench -c\(clients) -M prepared running bench/peer/tokenize.sql (token, HMAC fingerprint, "
            + "pgp_sym_encrypt, INSERT; synchronous_commit on) over a Unix socket"
        do {
            let cluster = try PostgresCluster(context: context, schema: context.benchDirectory + "/peer/schema.sql")
            defer { cluster.stop() }
            let hex = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            let load = PgbenchLoad(
                cluster: cluster, script: context.benchDirectory + "/peer/tokenize.sql", clients: clients,
                variables: ["fkey": hex, "dkey": String(hex.reversed())])
            let plan = context.loadPlan
            context.progress.step("\(context.suiteName) › PostgreSQL + pgcrypto peer › warm-up")
            _ = try load.run(seconds: plan.warmupSeconds)
            var samples: [Sample] = []
            for run in 0..<plan.runs {
                context.progress.step("\(context.suiteName) › PostgreSQL + pgcrypto peer › run \(run + 1)/\(plan.runs)")
                samples.append(try load.run(seconds: plan.seconds))
            }
            comparison.anchor = Series(label: "PostgreSQL + pgcrypto (pgbench)", samples: samples)
        } catch {
            comparison.anchorNote = "PostgreSQL did not run: \(error)"
        }
        if let subject = comparison.subject, let anchor = comparison.anchor, anchor.median > 0 {
            comparison.ratio = subject.median / anchor.median
        }
        comparison.target = Target(goal: "≥ 2x the PostgreSQL + pgcrypto peer", met: comparison.ratio.map { $0 >= 2 })
        return comparison
    }

    /// 64 connections paying into one wallet, against the same pay-ins into 64 wallets (`distinct`): rate, errors,
    /// and whether the wallet's balance moved by exactly the credits made (no lost or doubled update).
    func oneWallet(
        server: CardVaultServer, setup: MerchantSetup, distinct: Series, context: SuiteContext
    )
        -> (Comparison, String?)
    {
        let connections = 64
        var comparison = Comparison(name: "pay-in (frictionless) into one wallet, 64 conns", unit: "pay-ins/s")
        comparison.note =
            "the pay-in line's 64 shoppers (own user, card, IP) all credit the first shopper's wallet; "
            + "anchor: the same pay-ins into 64 distinct wallets in this run"
        comparison.anchor = distinct
        let load = WrkLoad(
            url: server.url, script: context.benchDirectory + "/wrk/payin.lua", connections: connections,
            scriptArguments: [setup.session.clientId, setup.session.token, setup.oneWalletFile],
            threadPerConnection: true)
        let wallet = setup.shoppers[0].wallet
        let plan = context.loadPlan
        var samples: [Sample] = []
        var exact = true
        var notes: [String] = []
        do {
            context.progress.step("\(context.suiteName) › pay-in into one wallet › warm-up")
            _ = try load.runReporting(seconds: plan.warmupSeconds)
            for run in 0..<plan.runs {
                context.progress.step("\(context.suiteName) › pay-in into one wallet › run \(run + 1)/\(plan.runs)")
                // In-flight pay-ins finish after wrk stops (the warm-up's too): wait for the balance to settle.
                func settled() throws -> Int64 {
                    var balance = try setup.session.walletBalance(wallet)
                    for _ in 0..<20 {
                        Thread.sleep(forTimeInterval: 0.05)
                        let again = try setup.session.walletBalance(wallet)
                        if again == balance { break }
                        balance = again
                    }
                    return balance
                }
                let before = try settled()
                let (sample, report) = try load.runReporting(seconds: plan.seconds)
                let after = try settled()
                let succeeded = report.completed ?? 0
                let credits = (after - before) / 1000
                let whole = (after - before) % 1000 == 0
                // Every acknowledged credit is in the balance; at most one per connection was in flight unseen.
                let runExact = whole && credits >= Int64(succeeded) && credits <= Int64(succeeded + connections)
                exact = exact && runExact && report.errors == 0 && (report.refused ?? 0) == 0
                notes.append(
                    "run \(run + 1): \(succeeded) SUCCEEDED answers, balance +\(after - before) = \(credits) credits of "
                        + "10.00, \(report.refused ?? 0) refused, \(report.errors) errors")
                if (report.refused ?? 0) > 0, let text = report.sample {
                    notes.append("refused e.g. " + text.prefix(160))
                }
                var counted = sample
                counted.rate = Double(succeeded) / (report.duration_us / 1e6)
                counted.errors = report.errors + (report.refused ?? 0)
                samples.append(counted)
            }
            comparison.subject = Series(label: "cardvault serve, direct pay-ins into one wallet", samples: samples)
        } catch {
            comparison.subjectNote = "failed: \(error)"
            return (comparison, nil)
        }
        if let subject = comparison.subject, distinct.median > 0 { comparison.ratio = subject.median / distinct.median }
        comparison.target = Target(
            goal: "0 errors, balance exact, ≥ 0.5x the distinct wallets", met: exact && (comparison.ratio ?? 0) >= 0.5)
        return (
            comparison,
            "One wallet: " + notes.joined(separator: "; ") + (exact ? " (balance exact)." : " (NOT EXACT or errors).")
        )
    }

    private func generatorText(_ comparison: Comparison, label: String, threads: Int) -> String {
        var text = label + ":"
        if let anchor = comparison.anchor, let cores = anchor.generatorCores {
            text += " \(Formatting.significant(cores)) against nginx (\(Formatting.rate(anchor.median)) req/s)"
        }
        if let subject = comparison.subject, let cores = subject.generatorCores {
            text += ", \(Formatting.significant(cores)) against CardVault (\(Formatting.rate(subject.median)) req/s)"
            if let anchor = comparison.anchor, anchor.median > 0 {
                text +=
                    subject.median * 1.2 < anchor.median
                    ? ", so wrk had headroom: the same set-up delivered "
                        + Formatting.ratio(anchor.median / max(subject.median, 1)) + " the subject's rate to nginx"
                    : ", close to what wrk delivers to nginx: the shared ceiling (wrk and server on 2 cores) may limit it"
            }
        }
        return text
    }
}

/// Flows completed per run (rates), read back after ``SuiteContext/compare`` has run.
final class CompletedCounter {
    private(set) var rates: [Double] = []
    var refusal: String?

    func add(_ completed: Int, seconds: Double) {
        if seconds > 0 { rates.append(Double(completed) / seconds) }
    }

    /// The median over the timed runs (the first rate is the warm-up's).
    var medianRate: Double? {
        let timed = rates.count > 1 ? Array(rates.dropFirst()) : rates
        return timed.isEmpty ? nil : Statistics.median(timed)
    }
}

/// The shoppers of the pay-in runs (each with a wallet and a registered card) and the merchant
/// session the scripts use.
struct MerchantSetup {
    struct Shopper {
        var user: String
        var wallet: String
        var card: String
    }

    let session: MerchantSession
    let shoppers: [Shopper]
    /// `<UserId>\t<WalletId>\t<CardId>` per line, for payin.lua.
    let shoppersFile: String
    /// The same shoppers all paying into the first shopper's wallet (a marketplace's seller wallet).
    let oneWalletFile: String

    init(server: CardVaultServer, context: SuiteContext, shoppers count: Int) throws {
        session = try MerchantSession(server: server)
        var made: [Shopper] = []
        for _ in 0..<count {
            let user = try session.createUser()
            made.append(
                Shopper(
                    user: user, wallet: try session.createWallet(owner: user), card: try session.createCard(user: user))
            )
        }
        shoppers = made
        shoppersFile = try context.temporaryDirectory("shoppers") + "/shoppers.tsv"
        try made.map { "\($0.user)\t\($0.wallet)\t\($0.card)\n" }.joined()
            .write(toFile: shoppersFile, atomically: false, encoding: .utf8)
        oneWalletFile = (shoppersFile as NSString).deletingLastPathComponent + "/one-wallet.tsv"
        try made.map { "\($0.user)\t\(made[0].wallet)\t\($0.card)\n" }.joined()
            .write(toFile: oneWalletFile, atomically: false, encoding: .utf8)
    }
}

/// The tokenization-only runs: before each, registrations are created (untimed, create.lua) until
/// there are 2.5 times as many as the run is expected to use (from the fastest run so far): each
/// connection has its own share and connections are not served equally fast. A connection that
/// runs out idles (50 ms between non-tokenization requests); a run where that idling exceeds 5% of
/// the connections' time is repeated once with twice as many registrations, then fails.
final class TokenizationRuns {
    /// The last timed run: its registrations (one file per thread) and the script's report.
    struct Run {
        var registrationsDirectory: String
        var threads: Int
        var report: WrkLoad.Report
        var clientId: String
    }

    private(set) var last: Run?
    /// Daemon CPU per request of each run (the warm-up's first).
    let cpu = CPUPerRequest()
    /// With `--profile`: the top frames of the last run's perf profile, and its data file.
    private(set) var profileFrames: [String] = []
    private(set) var profilePath: String?
    private var created: [Int] = []
    private var retried = 0
    /// The largest share of connection time spent out of registrations in a counted run.
    private var idleShare = 0.0
    /// Tokenizations per second expected (the fastest run so far; a guess before the first).
    private var expectedRate = 5_000.0
    /// Registrations created per second by create.lua (measured).
    private var creationRate = 2_000.0

    /// One run; `shared`: wrk's usual set-up (as many threads as cores, several connections each, tokenize-shared.lua)
    /// instead of one thread per connection.
    func run(
        seconds: Double, server: CardVaultServer, setup: MerchantSetup, connections: Int, context: SuiteContext,
        shared: Bool = false
    ) throws -> Sample {
        for attempt in 0..<2 {
            let wanted = Int(expectedRate * 2.5 * max(1, seconds.rounded())) * (attempt + 1) + 16 * connections
            let load = WrkLoad(
                url: server.url,
                script: context.benchDirectory + (shared ? "/wrk/tokenize-shared.lua" : "/wrk/tokenize.lua"),
                connections: connections, scriptArguments: [], threadPerConnection: !shared)
            let file = try createRegistrations(
                wanted, server: server, setup: setup, connections: connections, slices: load.threads, context: context)
            var timed = load
            timed.scriptArguments = [file.path]
            let profile =
                context.options.profile
                ? try DaemonProfile(
                    pid: server.processID, dataPath: try context.temporaryDirectory("profile") + "/perf.data")
                : nil
            let (sample, report) = try cpu.measure(server, requests: \.1.requests) {
                try timed.runReporting(seconds: seconds)
            }
            if let profile {
                profileFrames = try profile.finish()
                profilePath = profile.dataPath
            }
            let rate = Double(report.completed ?? 0) / (report.duration_us / 1e6)
            expectedRate = max(expectedRate, rate)
            let idle = Double(report.exhausted ?? 0) * 0.05 / (Double(connections) * report.duration_us / 1e6)
            if idle > 0.05 {
                retried += 1
                continue
            }
            idleShare = max(idleShare, idle)
            created.append(file.count)
            last = Run(
                registrationsDirectory: file.path, threads: connections, report: report,
                clientId: setup.session.clientId)
            var counted = sample
            counted.rate = rate
            return counted
        }
        throw BenchFailure("tokenization runs used up their registrations twice")
    }

    /// Creates at least `count` registrations with create.lua; returns the file listing them.
    private func createRegistrations(
        _ count: Int, server: CardVaultServer, setup: MerchantSetup, connections: Int, slices sliceCount: Int,
        context: SuiteContext
    ) throws -> (path: String, count: Int) {  // the directory of slice files
        let directory = try context.temporaryDirectory("registrations")
        var lines: [Substring] = []
        var round = 0
        while lines.count < count {
            let roundDirectory = directory + "/\(round)"
            try FileManager.default.createDirectory(atPath: roundDirectory, withIntermediateDirectories: true)
            let creation = WrkLoad(
                url: server.url, script: context.benchDirectory + "/wrk/create.lua", connections: connections,
                scriptArguments: [setup.session.clientId, setup.session.token, setup.shoppers[0].user, roundDirectory])
            let seconds = max(1, (Double(count - lines.count) / creationRate * 1.1).rounded(.up))
            _ = try creation.runReporting(seconds: seconds)
            var made = 0
            for file in try FileManager.default.contentsOfDirectory(atPath: roundDirectory).sorted()
            where file.hasPrefix("registrations-") {
                let text = try String(contentsOfFile: roundDirectory + "/" + file, encoding: .utf8)
                let part = text.split(separator: "\n")
                made += part.count
                lines += part
            }
            if made > 0 { creationRate = Double(made) / seconds }
            round += 1
            if round > 20 { throw BenchFailure("cannot create \(count) registrations (have \(lines.count))") }
        }
        // Deal them out, one file per wrk thread, as tokenize.lua reads them.
        var slices = [[Substring]](repeating: [], count: sliceCount)
        for (index, line) in lines.enumerated() { slices[index % sliceCount].append(line) }
        for (slice, part) in slices.enumerated() {
            try (part.joined(separator: "\n") + "\n").write(
                toFile: directory + "/slice-\(slice)", atomically: false, encoding: .utf8)
        }
        return (directory, lines.count)
    }

    var registrationsNote: String? {
        guard !created.isEmpty else { return nil }
        return "Tokenization runs: registrations created before each run (untimed, create.lua at "
            + "\(Formatting.rate(creationRate))/s): " + created.map(String.init).joined(separator: ", ")
            + (retried > 0 ? "; \(retried) run(s) ran out and were repeated with more" : "")
            + "; connections idle for want of a registration at most "
            + Formatting.significant(idleShare * 100) + "% of their time in a counted run."
    }
}
