public import VaultCore

/// The one place a route's rate limit is applied: a route names its class's limiter (one of
/// ``AbuseLimits``) and how its dialect words a 429; the gate spends from the client address's
/// bucket and answers 429 with `Retry-After` and `Cache-Control: no-store` when it is empty.
public enum RateLimitGate {
    /// Runs `handler` when `limiter` allows the request's address, else answers `refusal(seconds)`.
    public static func limited(
        _ limiter: AddressRateLimiter, _ request: Request, refusal: (Int) -> Response,
        _ handler: () async -> Response
    ) async -> Response {
        if case .limited(let seconds) = limiter.take(request.remoteAddress) {
            return tooManyRequests(refusal(seconds), retryAfter: seconds, request)
        }
        return await handler()
    }

    /// For limits that count failures only: refuses an address whose bucket is empty before
    /// `handler` runs; spends one token when `failed` says the answer was a failure.
    public static func limitedFailures(
        _ limiter: AddressRateLimiter, _ request: Request, refusal: (Int) -> Response,
        failed: (Response) -> Bool, _ handler: () async -> Response
    ) async -> Response {
        if case .limited(let seconds) = limiter.check(request.remoteAddress) {
            return tooManyRequests(refusal(seconds), retryAfter: seconds, request)
        }
        let response = await handler()
        if failed(response) { _ = limiter.take(request.remoteAddress) }
        return response
    }

    private static func tooManyRequests(_ response: Response, retryAfter seconds: Int, _ request: Request) -> Response {
        var response = response
        response.status = .tooManyRequests
        response.headers.set("Retry-After", String(seconds))
        response.headers.set("Cache-Control", "no-store")
        request.logger.info("rate limited", ["route": .string(request.route), "retryAfter": .int(seconds)])
        return response
    }
}
