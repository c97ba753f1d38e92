public import VaultCore

/// The one place a route's rate limit is applied: a route names its class's limiter (one of
/// ``AbuseLimits``) and how its dialect words a 429; the gate spends from the client address's
/// bucket and answers 429 with `Retry-After` and `Cache-Control: no-store` when it is empty. Every answer it
/// gates carries the bucket's standing as Mangopay's `X-RateLimit-*` headers.
public enum RateLimitGate {
    /// Runs `handler` when `limiter` allows the request's address, else answers `refusal(seconds)`.
    public static func limited(
        _ limiter: AddressRateLimiter, _ request: Request, refusal: (Int) -> Response,
        _ handler: () async -> Response
    ) async -> Response {
        if case .limited(let seconds) = limiter.take(request.remoteAddress) {
            return standing(limiter, request, tooManyRequests(refusal(seconds), retryAfter: seconds, request))
        }
        return standing(limiter, request, await handler())
    }

    /// For limits that count failures only: refuses an address whose bucket is empty before
    /// `handler` runs; spends one token when `failed` says the answer was a failure.
    public static func limitedFailures(
        _ limiter: AddressRateLimiter, _ request: Request, refusal: (Int) -> Response,
        failed: (Response) -> Bool, _ handler: () async -> Response
    ) async -> Response {
        if case .limited(let seconds) = limiter.check(request.remoteAddress) {
            return standing(limiter, request, tooManyRequests(refusal(seconds), retryAfter: seconds, request))
        }
        let response = await handler()
        if failed(response) { _ = limiter.take(request.remoteAddress) }
        return standing(limiter, request, response)
    }

    /// Adds `X-RateLimit-Limit`, `X-RateLimit` (spent), `X-RateLimit-Remaining` and `X-RateLimit-Reset` (Unix
    /// seconds when the bucket is full again), as Mangopay names them, from `limiter`'s bucket for the address.
    static func standing(_ limiter: AddressRateLimiter, _ request: Request, _ response: Response) -> Response {
        let standing = limiter.standing(request.remoteAddress)
        var response = response
        response.headers.set("X-RateLimit-Limit", String(standing.limit))
        response.headers.set("X-RateLimit", String(max(0, standing.limit - standing.remaining)))
        response.headers.set("X-RateLimit-Remaining", String(standing.remaining))
        response.headers.set("X-RateLimit-Reset", String(standing.resetsAt))
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
