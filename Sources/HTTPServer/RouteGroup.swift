public import VaultCore

/// A set of routes an area of the API contributes (health, metrics, the Mangopay dialect, hosted
/// pages ...). The application asks each group to register itself on one ``Router``.
public protocol RouteGroup: Sendable {
    /// Adds this group's routes to `router`.
    func register(on router: inout Router)
}

/// `GET /health`: `{"status":"ok"}` while the process serves, with `"keyCustody"` when given (how the master key
/// is kept: file, shares, pkcs11). Answered on the server's own thread.
public struct HealthRoutes: RouteGroup {
    private let body: [UInt8]

    /// - Parameter keyCustody: a plain word (no quoting is done).
    public init(keyCustody: String? = nil) {
        body = Array((keyCustody.map { #"{"status":"ok","keyCustody":""# + $0 + #""}"# } ?? #"{"status":"ok"}"#).utf8)
    }

    public func register(on router: inout Router) {
        let body = body
        router.addImmediate(.get, "/health") { _ in
            Response(status: .ok, headers: ["Content-Type": "application/json"], body: body)
        }
    }
}

/// `GET /metrics`: Prometheus text with request counts and latency histograms per route. With a
/// token, only requests that carry `Authorization: Bearer <token>` get it; others get 401.
public struct MetricsRoutes: RouteGroup {
    public let metrics: HTTPMetrics
    public let token: Redacted<String>?

    public init(metrics: HTTPMetrics, token: Redacted<String>? = nil) {
        self.metrics = metrics
        self.token = token
    }

    public func register(on router: inout Router) {
        let metrics = metrics
        let expected = token.map { Array(("Bearer " + $0.unsafeRevealed).utf8) }
        router.addImmediate(.get, "/metrics") { request in
            if let expected, !Self.matches(request.headers["Authorization"], expected) {
                return Response(
                    status: .unauthorized,
                    headers: [
                        "Content-Type": "text/plain; charset=utf-8", "WWW-Authenticate": #"Bearer realm="metrics""#,
                        "Cache-Control": "no-store",
                    ],
                    body: Array("A bearer token is required for /metrics\n".utf8))
            }
            return .text(metrics.prometheusText(), contentType: "text/plain; version=0.0.4; charset=utf-8")
        }
    }

    /// Compares in time that depends on the lengths only, never on where the first difference is.
    static func matches(_ header: String?, _ expected: [UInt8]) -> Bool {
        guard let header else { return false }
        let given = Array(header.utf8)
        guard given.count == expected.count else { return false }
        var difference: UInt8 = 0
        for index in 0..<given.count { difference |= given[index] ^ expected[index] }
        return difference == 0
    }
}
