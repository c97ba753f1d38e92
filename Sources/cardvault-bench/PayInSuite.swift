import Foundation

/// `payin`: the frictionless direct pay-in alone (the HTTP suite's pay-in lines without the registration flows
/// and tokenization runs around them), at 1 and 64 keep-alive connections against nginx in the same run, the
/// daemon's CPU per pay-in, and 64 connections paying into one wallet. With `--profile`, a perf profile of the
/// daemon during the last 64-connection pay-in run, with its top frames.
struct PayInSuite: BenchSuite {
    let name = "payin"
    let title = "frictionless direct pay-ins over loopback vs nginx (64-byte body), wrk keep-alive at 1/64 connections"

    static let connectionCounts = [1, 64]

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
        guard CardVaultServer.canServe(in: context) else {
            notes.append("Subject: \(subjectNotBuilt)")
            return []
        }
        context.progress.step("\(context.suiteName) › starting cardvault serve")
        let server = try CardVaultServer(context: context)
        defer { server.stop() }
        context.progress.step("\(context.suiteName) › creating shoppers, wallets and cards")
        let setup = try MerchantSetup(server: server, context: context, shoppers: Self.connectionCounts.max()!)
        notes.append(
            "Subject: `cardvault serve` (release build) with the HTTP suite's settings (fresh encrypted file store, "
                + "logLevel warn, risk velocity limits raised so that repeated pay-ins stay frictionless).")
        let wrk = context.benchDirectory + "/wrk"
        var comparisons: [Comparison] = []
        var cpuLines: [(name: String, cpu: CPUPerRequest)] = []
        var refusedSamples: [String] = []
        var profileFrames: [String] = []
        for connections in Self.connectionCounts {
            let label = "\(connections) conn\(connections == 1 ? "" : "s")"
            let nginxLoad = WrkLoad(
                url: nginx.url + "/", script: wrk + "/get.lua", connections: connections, threadPerConnection: true)
            let load = WrkLoad(
                url: server.url, script: wrk + "/payin.lua", connections: connections,
                scriptArguments: [setup.session.clientId, setup.session.token, setup.shoppersFile],
                threadPerConnection: true)
            let cpu = CPUPerRequest()
            cpuLines.append(("pay-in (frictionless), \(label)", cpu))
            let profiled = context.options.profile && connections == Self.connectionCounts.max()!
            var calls = 0
            let subject = Workload(label: "cardvault serve, direct pay-in") { seconds in
                // The first call is the warm-up; the last one is profiled.
                calls += 1
                let profile =
                    profiled && calls == context.loadPlan.runs + 1
                    ? try DaemonProfile(
                        pid: server.processID, dataPath: try context.temporaryDirectory("profile") + "/perf.data")
                    : nil
                let (sample, report) = try cpu.measure(server, requests: \.1.requests) {
                    try load.runReporting(seconds: seconds)
                }
                if let profile { profileFrames = try profile.finish(count: 40) }
                if (report.refused ?? 0) > 0, let text = report.sample {
                    refusedSamples.append("\(label): \(report.refused!) refused, e.g. \(text.prefix(160))")
                }
                var counted = sample
                counted.rate = Double(report.completed ?? 0) / (report.duration_us / 1e6)
                return counted
            }
            var line = context.compare(
                "pay-in (frictionless), \(label)", unit: "pay-ins/s", subject: .measured(subject),
                anchor: .measured(Workload(label: "nginx, 64-byte body") { try nginxLoad.run(seconds: $0) }),
                plan: context.loadPlan,
                note: "POST /payins/card/direct, 10.00 EUR with the frictionless sandbox card, one shopper (user, "
                    + "wallet, card, IP) per connection; only SUCCEEDED pay-ins count; wrk -t\(connections) "
                    + "-c\(connections) on both sides")
            if connections == Self.connectionCounts.max()! {
                let p99 = line.subject?.latency?.p99Micros
                line.target = Target(
                    goal: "≥ 0.15x nginx, p99 < 10 ms",
                    met: line.ratio.flatMap { ratio in p99.map { ratio >= 0.15 && $0 < 10_000 } })
            }
            comparisons.append(line)
        }
        if let distinct = comparisons.last?.subject {
            let (oneWallet, note) = HTTPSuite().oneWallet(
                server: server, setup: setup, distinct: distinct, context: context)
            comparisons.append(oneWallet)
            if let note { notes.append(note) }
        }
        for line in cpuLines {
            var comparison = Comparison(name: "daemon CPU per request: " + line.name, unit: "CPU µs/req")
            // The first measurement is the warm-up's.
            if let median = line.cpu.median(droppingWarmup: true) {
                comparison.subject = Series(
                    label: "cardvault serve, user + system CPU / requests answered",
                    samples: line.cpu.micros.dropFirst().map { Sample(rate: $0) })
                comparison.subject?.median = median
            }
            comparison.anchorNote = "none (CPU time)"
            comparison.note = "the daemon's user + system CPU (/proc/<pid>/stat) over each timed run / requests"
            comparisons.append(comparison)
        }
        notes.append(CPUPerRequest.threadNote(cpuLines.map { ($0.name, $0.cpu, true) }))
        if !refusedSamples.isEmpty { notes.append("Refused answers: " + refusedSamples.joined(separator: "; ") + ".") }
        if context.options.profile {
            if profileFrames.isEmpty {
                notes.append("Profile: none recorded (perf missing or the pay-in runs failed).")
            } else {
                let text = profileFrames.joined(separator: "\n    ")
                notes.append(
                    "Profile of the daemon during the last 64-connection pay-in run (perf record -e cpu-clock -g -p, "
                        + "self time by library and symbol):\n    " + text)
                print("\nTop frames of the daemon during the pay-in run (self time):\n    " + text)
            }
        }
        return comparisons
    }
}
