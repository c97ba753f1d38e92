import AdminChannel
import Configuration
import Foundation
import VaultStore

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `cardvault checkout add|list|remove`: a merchant's checkout ids, through the running daemon's API.
enum CheckoutCommand: Command {
    static let name = "checkout"
    static let summary = "register a client's hosted-checkout ids, callback URL prefixes and card types"
    static let help = """
        usage: cardvault checkout add --client-id ID --callback-prefix URL [--callback-prefix URL ...]
                                      --card-types master,visa [--checkout-id ID] [--merchant-name NAME]
                                      [--three-ds-policy required|merchantChoice] [--cvc-policy required|merchantChoice]
                                      [--url URL | --config FILE]
               cardvault checkout list --client-id ID [--json] [--url URL | --config FILE]
               cardvault checkout remove CHECKOUT_ID --client-id ID [--url URL | --config FILE]
               cardvault checkout pci --client-id ID (--on | --off) [--config FILE] [--data-dir DIR] [--keys-dir DIR]

        Registers checkout ids with the daemon at URL: --url, else CARDVAULT_URL, else the listen address
        of the configuration `serve` reads (--config FILE, else config/cardvault.json when it exists, then
        CARDVAULT_LISTEN and the TLS settings; a wildcard address is reached on loopback), as client ID.
        list prints a JSON array (--json is accepted for symmetry with the other lists). A checkout whose callbackUrl does not start with a registered prefix (same scheme,
        host and port, path on a segment boundary) is refused. The client's API key is read from
        CARDVAULT_API_KEY or, when that is unset, from the first line of standard input; never from the
        command line. Prints the registration (add) or the list (list) as JSON on standard output.

        pci (operator only) flags a client as PCI-compliant (--on: its payment data carries card numbers) or not
        (--off: CardVault tokens), through the running daemon's admin socket or on the files when it is stopped.

        Exit status: 0 done, 1 refused by the daemon (the reasons go to standard error), 64 bad usage,
        69 daemon unreachable.

        options:
          --client-id ID          the client (merchant) that owns the checkout ids
          --callback-prefix URL   an allowed callback URL prefix (repeatable; https, or http on localhost)
          --card-types LIST       the card types the checkout id accepts: master, visa, amex, discover,
                                  diners, maestro, jcb
          --checkout-id ID        8 to 64 letters and digits (default: a generated 32-character id)
          --merchant-name NAME    the name shown on the hosted page
          --three-ds-policy P     merchantChoice (default: each checkout session the merchant's server starts may
                                  set suppress3DS) or required (every checkout runs 3-D Secure)
          --cvc-policy P          merchantChoice (default: a session may set cvc2Support false) or required
          --url URL               the daemon's base URL
        """

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        guard let action = arguments.positional() else { throw UsageError("checkout needs add, list, remove or pci") }
        if action == "pci" { return try await pci(&arguments) }
        let explicitURL = try arguments.option("--url") ?? ProcessInfo.processInfo.environment["CARDVAULT_URL"]
        let configFile = try arguments.option("--config")
        _ = arguments.flag("--json")
        guard let clientId = try arguments.option("--client-id"), !clientId.isEmpty else {
            throw UsageError("--client-id is required")
        }
        let request: (method: String, path: String, body: [String: Any]?)
        switch action {
        case "add":
            var prefixes: [String] = []
            while let prefix = try arguments.option("--callback-prefix") { prefixes.append(prefix) }
            guard !prefixes.isEmpty else { throw UsageError("add needs at least one --callback-prefix") }
            guard let types = try arguments.option("--card-types") else { throw UsageError("add needs --card-types") }
            var body: [String: Any] = [
                "callbackUrlPrefixes": prefixes,
                "allowedCardTypes": types.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) },
            ]
            if let id = try arguments.option("--checkout-id") { body["checkoutId"] = id }
            if let name = try arguments.option("--merchant-name") { body["merchantName"] = name }
            if let policy = try arguments.option("--three-ds-policy") { body["threeDSPolicy"] = policy }
            if let policy = try arguments.option("--cvc-policy") { body["cvcPolicy"] = policy }
            request = ("POST", "/masterpass/checkouts", body)
        case "list":
            request = ("GET", "/masterpass/checkouts", nil)
        case "remove":
            guard let id = arguments.positional() else { throw UsageError("remove needs a CHECKOUT_ID") }
            request = ("DELETE", "/masterpass/checkouts/" + id, nil)
        default:
            throw UsageError("unknown checkout action \(action) (add, list, remove or pci)")
        }
        try arguments.finish()
        let url = try explicitURL ?? Self.daemonURL(CommandConfiguration.load(explicitFile: configFile))
        guard let base = URL(string: url), base.scheme == "http" || base.scheme == "https" else {
            throw UsageError("--url must be an http or https URL")
        }
        let apiKey = try readAPIKey()

        let client = DaemonClient(base: base)
        let tokenResponse = try await client.send(
            "POST", "/v2.01/oauth/token", body: Data("grant_type=client_credentials".utf8),
            headers: [
                "Authorization": "Basic " + Data("\(clientId):\(apiKey)".utf8).base64EncodedString(),
                "Content-Type": "application/x-www-form-urlencoded",
            ])
        guard tokenResponse.status == 200,
            let token = (try? JSONSerialization.jsonObject(with: tokenResponse.body) as? [String: Any])?["access_token"]
                as? String
        else { throw CommandFailure("the daemon refused the client's credentials (HTTP \(tokenResponse.status))") }
        let body = try request.body.map { try JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]) }
        let response = try await client.send(
            request.method, request.path, body: body,
            headers: ["Authorization": "Bearer " + token, "Content-Type": "application/json"])
        guard (200..<300).contains(response.status) else {
            throw CommandFailure("refused (HTTP \(response.status)): " + Self.reasons(response.body))
        }
        if !response.body.isEmpty {
            FileHandle.standardOutput.write(response.body + Data("\n".utf8))
        }
        return 0
    }

    /// `checkout pci`: the operator's PCI flag, over the admin channel.
    static func pci(_ arguments: inout Arguments) async throws -> Int32 {
        guard let clientId = try arguments.option("--client-id"), !clientId.isEmpty else {
            throw UsageError("--client-id is required")
        }
        let on = arguments.flag("--on")
        let off = arguments.flag("--off")
        guard on != off else { throw UsageError("pci needs exactly one of --on and --off") }
        let access = try StoreAccess.parse(&arguments)
        try arguments.finish()
        let result = try await access.call(
            "checkout.pci", arguments: ["clientId": .string(clientId), "compliant": .bool(on)])
        print(
            #"{"clientId": "\#(clientId)", "pciCompliant": \#(result["pciCompliant"].map { $0 == .bool(true) } ?? on)}"#
        )
        return 0
    }

    /// Where a local client reaches the daemon the configuration describes: its listen address (loopback for a
    /// wildcard one), `https` when TLS is on.
    /// - Throws: ``UsageError`` when the configuration lets the daemon pick its port (0).
    static func daemonURL(_ configuration: CardVaultConfiguration) throws -> String {
        guard configuration.listenPort != 0 else {
            throw UsageError("the configuration's listen port is 0 (picked at start-up): give --url")
        }
        var host = configuration.listenHost
        if host == "0.0.0.0" || host.isEmpty { host = "127.0.0.1" }
        if host == "::" { host = "::1" }
        if host.contains(":") { host = "[" + host + "]" }
        return (configuration.tls.isEnabled ? "https" : "http") + "://" + host + ":" + String(configuration.listenPort)
    }

    /// The key from `CARDVAULT_API_KEY`, else the first line of standard input.
    static func readAPIKey() throws -> String {
        if let key = ProcessInfo.processInfo.environment["CARDVAULT_API_KEY"], !key.isEmpty { return key }
        let input = FileHandle.standardInput.readDataToEndOfFile()
        let line = String(decoding: input, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
        let key = line.trimmingCharacters(in: .whitespaces)
        guard !key.isEmpty else { throw UsageError("no API key: set CARDVAULT_API_KEY or pipe it on standard input") }
        return key
    }

    /// "field: description; ..." from a Masterpass Errors body.
    static func reasons(_ body: Data) -> String {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
            let list = (object["Errors"] as? [String: Any])?["Error"] as? [[String: Any]]
        else { return String(decoding: body.prefix(500), as: UTF8.self) }
        return list.map { ($0["Source"] as? String ?? "") + ": " + ($0["Description"] as? String ?? "") }
            .joined(separator: "; ")
    }
}

/// A minimal HTTP client for talking to the local daemon.
struct DaemonClient {
    let base: URL

    struct Reply {
        var status: Int
        var body: Data
    }

    func send(_ method: String, _ path: String, body: Data?, headers: [String: String]) async throws -> Reply {
        guard let url = URL(string: path, relativeTo: base) else { throw UsageError("bad URL") }
        var request = URLRequest(url: url, timeoutInterval: 15)
        request.httpMethod = method
        request.httpBody = body
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let session = URLSession(configuration: .ephemeral, delegate: NoChallenges(), delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        do {
            let answer = try await session.data(for: request)
            return Reply(status: (answer.1 as? HTTPURLResponse)?.statusCode ?? 0, body: answer.0)
        } catch let error as URLError where error.code == .userCancelledAuthentication || error.code == .cancelled {
            return Reply(status: 401, body: Data())
        } catch {
            throw CommandFailure("cannot reach the daemon at \(base.absoluteString)", status: 69)
        }
    }
}

/// Cancels a 401's `WWW-Authenticate` challenge (FoundationNetworking would otherwise wait for credentials); the
/// cancelled task is then reported as the 401 it was.
/// Unchecked Sendable: stateless; URLSession's delegate protocol needs an NSObject class.
private final class NoChallenges: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        completionHandler(.cancelAuthenticationChallenge, nil)
    }
}
