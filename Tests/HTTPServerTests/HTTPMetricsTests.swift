import Testing

@testable import HTTPServer

@Suite struct HTTPMetricsTests {
    @Test func countsAndHistogramsPerRoute() {
        let metrics = HTTPMetrics()
        let cards = metrics.series(method: "GET", route: "/v2.01/:clientId/cards/:id")
        cards.record(status: 200, nanoseconds: 200_000)  // 0.2 ms
        cards.record(status: 200, nanoseconds: 3_000_000)  // 3 ms
        cards.record(status: 404, nanoseconds: 50_000)
        #expect(metrics.series(method: "GET", route: "/v2.01/:clientId/cards/:id") === cards)
        let text = metrics.prometheusText()
        let base = #"method="GET",route="/v2.01/:clientId/cards/:id""#
        #expect(text.contains("cardvault_http_requests_total{\(base),status=\"200\"} 2\n"))
        #expect(text.contains("cardvault_http_requests_total{\(base),status=\"404\"} 1\n"))
        #expect(text.contains("cardvault_http_request_duration_seconds_bucket{\(base),le=\"0.0001\"} 1\n"))
        #expect(text.contains("cardvault_http_request_duration_seconds_bucket{\(base),le=\"0.00025\"} 2\n"))
        #expect(text.contains("cardvault_http_request_duration_seconds_bucket{\(base),le=\"0.0025\"} 2\n"))
        #expect(text.contains("cardvault_http_request_duration_seconds_bucket{\(base),le=\"0.005\"} 3\n"))
        #expect(text.contains("cardvault_http_request_duration_seconds_bucket{\(base),le=\"+Inf\"} 3\n"))
        #expect(text.contains("cardvault_http_request_duration_seconds_count{\(base)} 3\n"))
        #expect(text.contains("cardvault_http_request_duration_seconds_sum{\(base)} 0.00325\n"))
        #expect(text.contains("# TYPE cardvault_http_request_duration_seconds histogram"))
    }
}
