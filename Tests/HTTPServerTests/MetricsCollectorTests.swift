import Testing
import VaultCore

@testable import HTTPServer

@Suite struct MetricsCollectorTests {
    @Test func collectorsAreRenderedAfterTheHTTPSeriesOnEveryScrape() {
        let metrics = HTTPMetrics()
        metrics.series(method: "GET", route: "/health").record(status: 200, nanoseconds: 1000)
        let value = Locked(1)
        metrics.addCollector {
            "# TYPE cardvault_example gauge\ncardvault_example " + String(value.withLock { $0 }) + "\n"
        }
        let first = metrics.prometheusText()
        #expect(first.hasSuffix("# TYPE cardvault_example gauge\ncardvault_example 1\n"))
        #expect(first.contains(#"cardvault_http_requests_total{method="GET",route="/health",status="200"} 1"#))
        value.withLock { $0 = 2 }
        #expect(metrics.prometheusText().hasSuffix("cardvault_example 2\n"))
    }
}
