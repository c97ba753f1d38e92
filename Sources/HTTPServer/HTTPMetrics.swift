import Foundation
import Synchronization
import VaultCore

/// Request counts and latency histograms per route, rendered as Prometheus text.
///
/// Routes are labelled by their pattern (`/v2.01/:clientId/cards/:id`), never by the path sent,
/// so no identifier or card data can become a label value.
public final class HTTPMetrics: Sendable {
    /// Upper bounds of the latency buckets, in seconds.
    public static let bucketBounds: [Double] = [
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]
    private static let bucketNanos: [UInt64] = bucketBounds.map { UInt64(($0 * 1e9).rounded()) }

    /// The route label for requests that matched no route.
    public static let unmatchedRoute = "<unmatched>"

    private let series = Locked<[SeriesKey: RouteSeries]>([:])
    /// Connections closed as soon as accepted because the server or their address was at its
    /// connection limit (``ServerConfiguration/maxConnections``, ``ServerConfiguration/maxConnectionsPerAddress``).
    let refusedConnections = Atomic<UInt64>(0)

    /// Connections refused at a connection limit so far.
    public var connectionsRefused: UInt64 { refusedConnections.load(ordering: .relaxed) }
    private let order = Locked<[SeriesKey]>([])
    private let collectors = Locked<[@Sendable () -> String]>([])

    struct SeriesKey: Hashable {
        var method: String
        var route: String
    }

    public init() {}

    /// Adds Prometheus text made by another part of the daemon (the store's key metrics, say),
    /// rendered after the HTTP series on every scrape. The collector must write complete
    /// `# HELP`/`# TYPE` blocks ending in a newline, and no secret or identifier as a label value.
    public func addCollector(_ collector: @escaping @Sendable () -> String) {
        collectors.withLock { $0.append(collector) }
    }

    /// The counters for `method` on `route`, created on first use. The server looks these up once at
    /// start-up and records into them without any shared lock.
    public func series(method: String, route: String) -> RouteSeries {
        let key = SeriesKey(method: method, route: route)
        return series.withLock { all in
            if let existing = all[key] { return existing }
            let created = RouteSeries()
            all[key] = created
            order.withLock { $0.append(key) }
            return created
        }
    }

    /// The Prometheus text exposition (version 0.0.4) of every series.
    public func prometheusText() -> String {
        let keys = order.withLock { $0 }
        let snapshot = series.withLock { all in keys.map { ($0, all[$0]!.snapshot()) } }
        var text = "# HELP cardvault_http_requests_total HTTP requests answered, by route, method and status.\n"
        text += "# TYPE cardvault_http_requests_total counter\n"
        for (key, values) in snapshot {
            for (status, count) in values.statuses.sorted(by: { $0.key < $1.key }) {
                text += "cardvault_http_requests_total{" + labels(key) + ",status=\"" + String(status) + "\"} "
                text += String(count) + "\n"
            }
        }
        text += "# HELP cardvault_http_request_duration_seconds Time from request headers to response, by route.\n"
        text += "# TYPE cardvault_http_request_duration_seconds histogram\n"
        for (key, values) in snapshot where values.count > 0 {
            let base = labels(key)
            var cumulative: UInt64 = 0
            for (index, bound) in Self.bucketBounds.enumerated() {
                cumulative += values.buckets[index]
                text += "cardvault_http_request_duration_seconds_bucket{" + base + ",le=\"" + format(bound) + "\"} "
                text += String(cumulative) + "\n"
            }
            text += "cardvault_http_request_duration_seconds_bucket{" + base + ",le=\"+Inf\"} " + String(values.count)
            text += "\n"
            text += "cardvault_http_request_duration_seconds_sum{" + base + "} "
            text += format(Double(values.sumNanos) / 1e9) + "\n"
            text += "cardvault_http_request_duration_seconds_count{" + base + "} " + String(values.count) + "\n"
        }
        text += "# HELP cardvault_http_connections_refused_total Connections closed unanswered at a connection limit "
        text += "(in all or per address).\n"
        text += "# TYPE cardvault_http_connections_refused_total counter\n"
        text += "cardvault_http_connections_refused_total " + String(connectionsRefused) + "\n"
        for collector in collectors.withLock({ $0 }) { text += collector() }
        return text
    }

    private func labels(_ key: SeriesKey) -> String {
        "method=\"" + escape(key.method) + "\",route=\"" + escape(key.route) + "\""
    }

    private func escape(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == 0x5C || $0 == 0x22 || $0 == 0x0A }) else { return value }
        return value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    private func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    static func bucket(forNanos nanos: UInt64) -> Int {
        for (index, bound) in bucketNanos.enumerated() where nanos <= bound { return index }
        return bucketNanos.count
    }
}

/// The counters of one route and method.
public final class RouteSeries: Sendable {
    struct Values {
        var statuses: [Int: UInt64] = [:]
        var buckets = [UInt64](repeating: 0, count: HTTPMetrics.bucketBounds.count + 1)
        var sumNanos: UInt64 = 0
        var count: UInt64 = 0
    }

    private let values = Locked(Values())

    /// Counts one answered request.
    public func record(status: Int, nanoseconds: UInt64) {
        let bucket = HTTPMetrics.bucket(forNanos: nanoseconds)
        values.withLock { values in
            values.statuses[status, default: 0] += 1
            values.buckets[bucket] += 1
            values.sumNanos &+= nanoseconds
            values.count += 1
        }
    }

    func snapshot() -> Values { values.withLock { $0 } }

    /// How many requests were counted with `status` (for tests and diagnostics).
    public func count(status: Int) -> UInt64 { values.withLock { $0.statuses[status] ?? 0 } }
}
