import Foundation

/// `forward`: detokenize-and-forward through CardVault (`POST /v2.01/{ClientId}/forward`, the card number and
/// expiry substituted, the answer scrubbed, the access audited) to a local TLS receiver (nginx with a throwaway
/// CA's certificate), against wrk posting the same body straight to the same receiver over the same TLS, in the
/// same run. Both sides keep their connections (and TLS sessions) alive; the forward line adds the merchant's
/// loopback hop to CardVault, the card reads, two audit writes (fsynced) and the scrub.
struct ForwardSuite: BenchSuite {
    let name = "forward"
    let title = "detokenize-and-forward to a local TLS receiver vs wrk straight to it (same TLS), 16 connections"
    static let connections = 16

    func run(in context: SuiteContext, notes: inout [String]) throws -> [Comparison] {
        let pki = try context.temporaryDirectory("forward-pki")
        try ThrowawayCertificate.make(in: pki)
        let receiver: TLSReceiver
        do {
            receiver = try TLSReceiver(context: context, certificate: pki + "/server.pem", key: pki + "/server.key")
        } catch {
            notes.append("the TLS receiver (nginx) did not start: \(error)")
            return []
        }
        defer { receiver.stop() }
        let directBody = #"{"card":{"number":"4970107111111119","expiry":"1229"},"amount":1000,"currency":"EUR"}"#
        let anchorLoad = WrkLoad(
            url: receiver.url + "/psp/charge", script: context.benchDirectory + "/wrk/post.lua",
            connections: Self.connections, scriptArguments: ["-", directBody])
        let anchor = Side.measured(Workload(label: "wrk → nginx over TLS (direct)") { try anchorLoad.run(seconds: $0) })

        var subject = Side.unavailable(subjectNotBuilt)
        var server: CardVaultServer?
        if CardVaultServer.canServe(in: context) {
            do {
                context.progress.step("\(context.suiteName) › starting cardvault serve")
                let started = try CardVaultServer(
                    context: context,
                    extraEnvironment: [
                        "CARDVAULT_FORWARD_DESTINATIONS": receiver.url + "/psp/",
                        "CARDVAULT_FORWARD_CA_FILE": pki + "/ca.pem",
                        "CARDVAULT_FORWARD_PRIVATE_NETWORKS": "127.0.0.1/32,::1/128",
                        "CARDVAULT_FORWARD_MAX_CONCURRENT": "256",
                    ])
                server = started
                try ChildProcess.check(
                    CardVaultServer.binary(in: context),
                    [
                        "clients", "forward", started.credentials.clientId, "--on", "--data-dir", started.dataDirectory,
                        "--keys-dir", started.keysDirectory,
                    ])
                let session = try MerchantSession(server: started)
                let card = try session.createCard(user: try session.createUser())
                let body =
                    #"{"Url":"\#(receiver.url)/psp/charge","Method":"POST","Headers":{"Content-Type":"application/json"},"#
                    + #""Body":"{\"card\":{\"number\":\"{{card.\#(card).number}}\",\"expiry\":\"{{card.\#(card).expiry}}\"},"#
                    + #"\"amount\":1000,\"currency\":\"EUR\"}"}"#
                let load = WrkLoad(
                    url: started.url + session.api("forward"), script: context.benchDirectory + "/wrk/post.lua",
                    connections: Self.connections, scriptArguments: ["Bearer " + session.token, body])
                subject = .measured(Workload(label: "cardvault serve, POST /forward") { try load.run(seconds: $0) })
                notes.append(
                    "Forward: `cardvault serve` (release build, fresh data directory: every audit write fsynced) on "
                        + "127.0.0.1:\(started.port) forwarding to nginx over TLS on 127.0.0.1:\(receiver.port) "
                        + "(a throwaway CA in forward.caFile, TLS 1.3, keep-alive); the direct line is wrk posting the "
                        + "same body to the same nginx over TLS (wrk does not verify the certificate; CardVault does, "
                        + "once per connection). Number and expiry substituted, no CVC (it is single-use).")
            } catch {
                subject = .unavailable("failed to start: \(error)")
            }
        }
        defer { server?.stop() }
        return [
            context.compare(
                "forward a card (\(Self.connections) conns)", unit: "req/s", subject: subject, anchor: anchor,
                plan: context.loadPlan,
                note: "POST of a 90-byte JSON charge with the number and expiry; ratio = forwards/s ÷ direct req/s")
        ]
    }
}

/// A throwaway CA and a server certificate for localhost, 127.0.0.1 and ::1 (openssl command line).
enum ThrowawayCertificate {
    static func make(in directory: String) throws {
        let openssl = ChildProcess.which("openssl") ?? "/usr/bin/openssl"
        try ChildProcess.check(
            openssl,
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", directory + "/ca.key", "-out",
                directory + "/ca.pem", "-days", "2", "-subj", "/CN=cardvault-bench CA", "-addext",
                "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ])
        try ChildProcess.check(
            openssl,
            [
                "req", "-newkey", "rsa:2048", "-nodes", "-keyout", directory + "/server.key", "-out",
                directory + "/server.csr", "-subj", "/CN=localhost",
            ])
        try "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nextendedKeyUsage=serverAuth\n".write(
            toFile: directory + "/server.ext", atomically: false, encoding: .utf8)
        try ChildProcess.check(
            openssl,
            [
                "x509", "-req", "-in", directory + "/server.csr", "-CA", directory + "/ca.pem", "-CAkey",
                directory + "/ca.key", "-CAcreateserial", "-out", directory + "/server.pem", "-days", "2", "-extfile",
                directory + "/server.ext",
            ])
        chmod(directory + "/server.key", 0o644)
    }
}

/// nginx over TLS answering `/psp/` with a fixed JSON body (`bench/nginx/forward-receiver.conf.template`).
final class TLSReceiver {
    let port: Int
    private let child: ChildProcess

    init(context: SuiteContext, certificate: String, key: String) throws {
        let template = try String(
            contentsOfFile: context.benchDirectory + "/nginx/forward-receiver.conf.template", encoding: .utf8)
        let prefix = try context.temporaryDirectory("nginx-tls")
        chmod(prefix, 0o755)
        port = try LoopbackPort.free()
        let user = getuid() == 0 ? "nobody nogroup" : (ProcessInfo.processInfo.environment["USER"] ?? "nobody")
        let config =
            template
            .replacingOccurrences(of: "@PREFIX@", with: prefix)
            .replacingOccurrences(of: "@PORT@", with: String(port))
            .replacingOccurrences(of: "@USER@", with: user)
            .replacingOccurrences(of: "@CERT@", with: certificate)
            .replacingOccurrences(of: "@KEY@", with: key)
        let path = prefix + "/nginx.conf"
        try config.write(toFile: path, atomically: false, encoding: .utf8)
        let nginx = ChildProcess.which("nginx") ?? "/usr/sbin/nginx"
        child = try ChildProcess.start(nginx, ["-c", path, "-p", prefix, "-e", prefix + "/error.log"])
        let process = child
        try LoopbackPort.waitUntilAccepting(port, timeout: 10, what: "nginx (TLS)") { process.isRunning }
    }

    /// `https://localhost:PORT` (the name the certificate is for).
    var url: String { "https://localhost:\(port)" }

    func stop() { child.stop() }

    deinit { child.stop() }
}
