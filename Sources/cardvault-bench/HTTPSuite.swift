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
        for connections in Self.connectionCounts {
            let label = "\(connections) conn\(connections == 1 ? "" : "s")"
            let nginxLoad = WrkLoad(
                url: nginx.url + "/", script: get, connections: connections, threadPerConnection: true)
            let anchor = Side.measured(Workload(label: "nginx, 64-byte body") { try nginxLoad.run(seconds: $0) })
            var flowSide = Side.unavailable(serverNote)
            let flowCounts = CompletedCounter()
            if let server, let setup {
                let load = WrkLoad(
                    url: server.url, script: wrkDirectory + "/flow.lua", connections: connections,
                    scriptArguments: [setup.session.clientId, setup.session.token, setup.shoppers[0].user],
                    threadPerConnection: true)
                let counter = flowCounts
                flowSide = .measured(
                    Workload(label: "cardvault serve, registration flow") { seconds in
                        let (sample, report) = try load.runReporting(seconds: seconds)
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
                do {
                    context.progress.step("\(context.suiteName) › pay-in, \(label) › warm-up")
                    _ = try load.runReporting(seconds: plan.warmupSeconds)
                    for run in 0..<plan.runs {
                        context.progress.step("\(context.suiteName) › pay-in, \(label) › run \(run + 1)/\(plan.runs)")
                        let (sample, report) = try load.runReporting(seconds: plan.seconds)
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

        let connections = Self.tokenizationConnections
        let label = "\(connections) conns"
        let nginxLoad = WrkLoad(url: nginx.url + "/", script: get, connections: connections, threadPerConnection: true)
        var tokenizeSide = Side.unavailable(serverNote)
        let tokenization = TokenizationRuns()
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
        if let registrations = tokenization.registrationsNote { notes.append(registrations) }

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
            .write(toFile: shoppersFile, atomically: true, encoding: .utf8)
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
    private var created: [Int] = []
    private var retried = 0
    /// The largest share of connection time spent out of registrations in a counted run.
    private var idleShare = 0.0
    /// Tokenizations per second expected (the fastest run so far; a guess before the first).
    private var expectedRate = 5_000.0
    /// Registrations created per second by create.lua (measured).
    private var creationRate = 2_000.0

    func run(
        seconds: Double, server: CardVaultServer, setup: MerchantSetup, connections: Int, context: SuiteContext
    ) throws -> Sample {
        for attempt in 0..<2 {
            let wanted = Int(expectedRate * 2.5 * max(1, seconds.rounded())) * (attempt + 1) + 16 * connections
            let file = try createRegistrations(
                wanted, server: server, setup: setup, connections: connections, context: context)
            let load = WrkLoad(
                url: server.url, script: context.benchDirectory + "/wrk/tokenize.lua", connections: connections,
                scriptArguments: [file.path], threadPerConnection: true)
            let (sample, report) = try load.runReporting(seconds: seconds)
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
        _ count: Int, server: CardVaultServer, setup: MerchantSetup, connections: Int, context: SuiteContext
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
        // Deal them out, one file per connection (wrk thread), as tokenize.lua reads them.
        var slices = [[Substring]](repeating: [], count: connections)
        for (index, line) in lines.enumerated() { slices[index % connections].append(line) }
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
