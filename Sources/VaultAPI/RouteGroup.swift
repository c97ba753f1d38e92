import HTTPServer

/// A set of routes an area of the API contributes (health, metrics, the Mangopay dialect, hosted
/// pages ...). The application asks each group to register itself on one ``Router``.
public protocol RouteGroup: Sendable {
    /// Adds this group's routes to `router`.
    func register(on router: inout Router)
}

/// `GET /health`: `{"status":"ok"}` while the process serves. Answered on the server's own thread.
public struct HealthRoutes: RouteGroup {
    private static let body = Array(#"{"status":"ok"}"#.utf8)

    public init() {}

    public func register(on router: inout Router) {
        router.addImmediate(.get, "/health") { _ in
            Response(status: .ok, headers: ["Content-Type": "application/json"], body: Self.body)
        }
    }
}

/// `GET /metrics`: Prometheus text with request counts and latency histograms per route.
public struct MetricsRoutes: RouteGroup {
    public let metrics: HTTPMetrics

    public init(metrics: HTTPMetrics) { self.metrics = metrics }

    public func register(on router: inout Router) {
        let metrics = metrics
        router.addImmediate(.get, "/metrics") { _ in
            .text(metrics.prometheusText(), contentType: "text/plain; version=0.0.4; charset=utf-8")
        }
    }
}
