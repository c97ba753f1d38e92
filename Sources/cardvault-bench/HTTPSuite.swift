import Foundation

/// `http`: CardVault over loopback at 1, 16 and 64 keep-alive connections, driven by wrk with the
/// bench's Lua scripts, against nginx serving a fixed 64-byte body in the same run.
struct HTTPSuite: BenchSuite {
    let name = "http"
    let title = "CardVault over loopback vs nginx (64-byte body), wrk keep-alive at 1/16/64 connections"

    static let connectionCounts = [1, 16, 64]

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
        if CardVaultServer.canServe(in: context) {
            do {
                server = try CardVaultServer(context: context)
                notes.append("Subject: `cardvault serve` (release build) on 127.0.0.1:\(server!.port), "
                    + "log level warn (nginx runs without an access log), fresh data and keys directories.")
            } catch {
                serverNote = "failed to start: \(error)"
            }
        }
        defer { server?.stop() }
        let script = context.benchDirectory + "/wrk/get.lua"
        var comparisons: [Comparison] = []
        var headroom: [String] = []
        var closeToCeiling: [String] = []
        var wrkSaturated: [String] = []
        var generator: [String] = []
        for connections in Self.connectionCounts {
            let anchorLoad = WrkLoad(url: nginx.url + "/", script: script, connections: connections)
            let anchor = Side.measured(Workload(label: "nginx, 64-byte body") { try anchorLoad.run(seconds: $0) })
            var subject = Side.unavailable(serverNote)
            if let server {
                let load = WrkLoad(url: server.url + "/health", script: script, connections: connections)
                subject = .measured(Workload(label: "cardvault serve, GET /health") { try load.run(seconds: $0) })
            }
            let label = "\(connections) conn\(connections == 1 ? "" : "s")"
            let health = context.compare(
                "GET /health (placeholder), \(label)", unit: "req/s", subject: subject, anchor: anchor,
                plan: context.loadPlan,
                note: "placeholder subject until the merchant API lands: GET /health, not the card registration flow; "
                    + "wrk -t\(anchorLoad.threads) -c\(connections) on both sides")
            comparisons.append(health)
            if let cores = health.anchor?.generatorCores, cores >= 0.9 * Double(anchorLoad.threads) {
                wrkSaturated.append(label)
            }
            if let cores = health.anchor?.generatorCores {
                var text = "\(label) (wrk -t\(anchorLoad.threads)): \(Formatting.significant(cores)) cores against nginx"
                if let subjectCores = health.subject?.generatorCores {
                    text += ", \(Formatting.significant(subjectCores)) against CardVault"
                }
                generator.append(text)
            }
            if let nginxRate = health.anchor?.median, let subjectRate = health.subject?.median, subjectRate > 0 {
                headroom.append("\(label): nginx \(Formatting.rate(nginxRate)) vs CardVault "
                    + "\(Formatting.rate(subjectRate)) req/s (\(Formatting.ratio(nginxRate / subjectRate)))")
                if nginxRate < subjectRate * 1.2 { closeToCeiling.append(label) }
            }
            for flow in ["tokenization POST", "card registration flow", "pay-in"] {
                var comparison = Comparison(name: "\(flow), \(label)", unit: "req/s", subjectNote: subjectNotBuilt)
                comparison.anchor = health.anchor
                comparison.anchorNote = health.anchorNote
                if flow == "tokenization POST" && connections == 64 {
                    comparison.target = Target(goal: "≥ 0.5x nginx, p99 < 5 ms", met: nil)
                }
                comparisons.append(comparison)
            }
        }
        if !generator.isEmpty {
            notes.append("Load generator CPU (user + system time / wall time; a thread below one core is waiting "
                + "on the server, not saturated): " + generator.joined(separator: "; ") + ".")
        }
        if headroom.isEmpty {
            notes.append("Load generator check: wrk's ceiling is at least the nginx rate at each connection count; "
                + "no CardVault subject ran to compare it with.")
        } else if closeToCeiling.isEmpty {
            notes.append("Load generator check: wrk with the same threads and connections drives nginx at least 1.2x "
                + "above the subject (" + headroom.joined(separator: "; ") + "), so wrk is not what limits CardVault.")
        } else {
            notes.append("Load generator check: " + headroom.joined(separator: "; ") + ". At "
                + closeToCeiling.joined(separator: ", ") + " CardVault is within 1.2x of what wrk gets from nginx, so "
                + "there the shared ceiling (wrk + server on the same cores, loopback) is reached and the ratio is a "
                + "lower bound; "
                + (wrkSaturated.isEmpty
                    ? "wrk's threads stayed below one core each (CPU above), so wrk itself was not saturated."
                    : "wrk's threads were near one core each at " + wrkSaturated.joined(separator: ", ")
                        + ", so there wrk may be the limit."))
        }
        return comparisons
    }
}
