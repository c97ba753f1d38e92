import VaultCore

/// A request handler that may wait (for a durable write, say) before it answers.
public typealias Handler = @Sendable (Request) async throws -> Response

/// A handler that answers at once without waiting; the server runs it on its own thread, skipping
/// the hop to the concurrency pool (for cheap, hot routes such as `/health`).
public typealias ImmediateHandler = @Sendable (Request) throws -> Response

/// Routes requests by method and path. Patterns are `/`-separated segments; a segment `:name`
/// matches any one non-empty segment and its percent-decoded value lands in
/// `request.parameters["name"]`. A literal segment wins over a parameter at the same place.
///
/// As Mangopay's API does, literal segments match without regard to ASCII case (`/CardRegistrations/` is
/// `/cardregistrations/`) and one trailing slash is ignored, in patterns and paths alike; parameters keep their case.
///
/// Build it with ``add(_:_:handler:)`` (or ``get(_:handler:)`` ...), then hand it to ``HTTPServer``
/// or call ``respond(to:)`` directly in tests.
public struct Router: Sendable {
    /// How a route runs.
    public enum Body: Sendable {
        case async(Handler)
        case immediate(ImmediateHandler)
    }

    /// One registered route.
    public struct Route: Sendable {
        /// Position in registration order (the key for per-route metrics).
        public let index: Int
        public let method: HTTPMethod
        public let pattern: String
        let segments: [Segment]
        public let body: Body
    }

    /// The outcome of looking up a method and path.
    public enum Match: Sendable {
        case found(Route, parameters: [String: String])
        /// The path exists for other methods.
        case methodNotAllowed([HTTPMethod])
        case notFound
        /// The path could not be decoded.
        case malformed(HTTPError)
    }

    enum Segment: Sendable, Equatable {
        case literal(Substring)
        case parameter(String)
    }

    /// Routes with the same segment shape, keyed by method.
    struct PatternGroup: Sendable {
        var segments: [Segment]
        var byMethod: [HTTPMethod: Int]
        var literalCount: Int { segments.count { if case .literal = $0 { true } else { false } } }
    }

    public private(set) var routes: [Route] = []
    /// How the HTTP layer's own errors (unknown path, wrong method, limits, unexpected failures) are worded.
    public var errorDialect: HTTPErrorDialect = .plain
    /// When set, the answer to every request no route takes (instead of 404 or 405): a sealed daemon's 503.
    public var unmatched: HTTPError?
    private var literalPaths: [String: PatternGroup] = [:]
    private var parameterized: [PatternGroup] = []
    /// Positions in `parameterized` (ascending, so precedence holds) by segment count and first segment: those
    /// whose first segment is that literal, and those whose first segment is a parameter. A path is compared only
    /// with the groups of its shape instead of with every group.
    private var byFirstLiteral: [Shape: [Int]] = [:]
    private var byFirstParameter: [Int: [Int]] = [:]

    struct Shape: Hashable, Sendable {
        var count: Int
        var first: String
    }

    public init(errorDialect: HTTPErrorDialect = .plain) {
        self.errorDialect = errorDialect
    }

    /// Registers `handler` for `method` on `pattern`.
    ///
    /// - Precondition: the pattern starts with `/` and is not registered yet for this method.
    public mutating func add(_ method: HTTPMethod, _ pattern: String, handler: @escaping Handler) {
        register(method, pattern, .async(handler))
    }

    /// Registers a handler that answers without waiting (see ``ImmediateHandler``).
    public mutating func addImmediate(_ method: HTTPMethod, _ pattern: String, handler: @escaping ImmediateHandler) {
        register(method, pattern, .immediate(handler))
    }

    public mutating func get(_ pattern: String, handler: @escaping Handler) { add(.get, pattern, handler: handler) }
    public mutating func post(_ pattern: String, handler: @escaping Handler) { add(.post, pattern, handler: handler) }
    public mutating func put(_ pattern: String, handler: @escaping Handler) { add(.put, pattern, handler: handler) }
    public mutating func delete(_ pattern: String, handler: @escaping Handler) {
        add(.delete, pattern, handler: handler)
    }

    private mutating func register(_ method: HTTPMethod, _ pattern: String, _ body: Body) {
        precondition(pattern.hasPrefix("/"), "route pattern must start with /: \(pattern)")
        let segments: [Segment] = Self.withoutTrailingSlash(pattern).split(
            separator: "/", omittingEmptySubsequences: false
        ).dropFirst().map {
            $0.hasPrefix(":") && $0.count > 1
                ? .parameter(String($0.dropFirst())) : .literal(Substring($0.lowercased()))
        }
        let route = Route(index: routes.count, method: method, pattern: pattern, segments: segments, body: body)
        let isLiteral = !segments.contains { if case .parameter = $0 { true } else { false } }
        if isLiteral {
            let key = Self.withoutTrailingSlash(pattern).lowercased()
            var group = literalPaths[key] ?? PatternGroup(segments: segments, byMethod: [:])
            precondition(group.byMethod[method] == nil, "route registered twice: \(method) \(pattern)")
            group.byMethod[method] = route.index
            literalPaths[key] = group
        } else if let position = parameterized.firstIndex(where: { $0.segments == segments }) {
            precondition(
                parameterized[position].byMethod[method] == nil, "route registered twice: \(method) \(pattern)")
            parameterized[position].byMethod[method] = route.index
        } else {
            parameterized.append(PatternGroup(segments: segments, byMethod: [method: route.index]))
            // Literal segments first, left to right: `/cards/mine` wins over `/cards/:id`.
            parameterized.sort { lhs, rhs in
                for (left, right) in zip(lhs.segments, rhs.segments) {
                    switch (left, right) {
                    case (.literal, .parameter): return true
                    case (.parameter, .literal): return false
                    default: continue
                    }
                }
                return lhs.literalCount > rhs.literalCount
            }
            byFirstLiteral = [:]
            byFirstParameter = [:]
            for (position, group) in parameterized.enumerated() {
                switch group.segments.first {
                case .literal(let text):
                    byFirstLiteral[Shape(count: group.segments.count, first: String(text)), default: []].append(
                        position)
                case .parameter, nil:
                    byFirstParameter[group.segments.count, default: []].append(position)
                }
            }
        }
        routes.append(route)
    }

    /// Finds the route for `method` and `path` (percent-encoded, without the query).
    public func match(_ method: HTTPMethod, path: String) -> Match {
        let path = Self.withoutTrailingSlash(path)
        let hasUpperCase = path.utf8.contains { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }
        if let group = literalPaths[hasUpperCase ? path.lowercased() : path] {
            return pick(group, method, parameters: [:])
        }
        guard !parameterized.isEmpty, path.utf8.first == UInt8(ascii: "/") else { return .notFound }
        let parts = Self.segments(of: path)
        let first = parts.first.map { hasUpperCase ? $0.lowercased() : String($0) } ?? ""
        let literal = byFirstLiteral[Shape(count: parts.count, first: first)] ?? []
        let wildcard = byFirstParameter[parts.count] ?? []
        var nextLiteral = 0
        var nextWildcard = 0
        // Both lists ascending: take them merged, in `parameterized` order.
        candidates: while nextLiteral < literal.count || nextWildcard < wildcard.count {
            let position: Int
            if nextWildcard >= wildcard.count
                || (nextLiteral < literal.count && literal[nextLiteral] < wildcard[nextWildcard])
            {
                position = literal[nextLiteral]
                nextLiteral += 1
            } else {
                position = wildcard[nextWildcard]
                nextWildcard += 1
            }
            let group = parameterized[position]
            var parameters: [String: String] = [:]
            for (segment, part) in zip(group.segments, parts) {
                switch segment {
                case .literal(let text):
                    if !Self.equalIgnoringASCIICase(lowercased: text, part) { continue candidates }
                case .parameter(let name):
                    if part.isEmpty { continue candidates }
                    do {
                        parameters[name] = try URLEncodedForm.percentDecode(part)
                    } catch {
                        return .malformed(error)
                    }
                }
            }
            return pick(group, method, parameters: parameters)
        }
        return .notFound
    }

    /// `path` without one trailing `/` (`/` itself stays).
    static func withoutTrailingSlash(_ path: String) -> String {
        guard path.utf8.count > 1, path.utf8.last == UInt8(ascii: "/") else { return path }
        return String(path.dropLast())
    }

    /// Whether `part` equals `text` (already lower case) when ASCII letters of `part` are lowered.
    static func equalIgnoringASCIICase(lowercased text: Substring, _ part: Substring) -> Bool {
        guard text.utf8.count == part.utf8.count else { return false }
        return zip(text.utf8, part.utf8).allSatisfy { expected, byte in
            expected == (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte)
        }
    }

    /// The `/`-separated segments of `path` after its leading `/` (empty ones kept), split on its UTF-8 bytes:
    /// `split` on the `String` itself walks grapheme clusters, which cost most of a match.
    static func segments(of path: String) -> [Substring] {
        let utf8 = path.utf8
        var parts: [Substring] = []
        parts.reserveCapacity(8)
        var start = utf8.index(after: utf8.startIndex)
        var index = start
        while index != utf8.endIndex {
            if utf8[index] == UInt8(ascii: "/") {
                parts.append(path[start..<index])
                start = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        parts.append(path[start..<utf8.endIndex])
        return parts
    }

    private func pick(_ group: PatternGroup, _ method: HTTPMethod, parameters: [String: String]) -> Match {
        if let index = group.byMethod[method] ?? (method == .head ? group.byMethod[.get] : nil) {
            return .found(routes[index], parameters: parameters)
        }
        return .methodNotAllowed(group.byMethod.keys.sorted { $0.rawValue < $1.rawValue })
    }

    /// Routes and answers `request` in-process, exactly as the server does after reading it
    /// (routing, error mapping, request id header), without sockets.
    public func respond(to request: Request) async -> Response {
        var request = request
        var response: Response
        switch match(request.method, path: request.path) {
        case .found(let route, let parameters):
            request.parameters = parameters
            request.route = route.pattern
            do {
                switch route.body {
                case .async(let handler): response = try await handler(request)
                case .immediate(let handler): response = try handler(request)
                }
            } catch {
                response = ErrorResponder.response(for: error, request: request, dialect: errorDialect)
            }
        case .methodNotAllowed(let allowed):
            response = errorDialect.response(for: unmatched ?? .methodNotAllowed(allowed: allowed))
        case .notFound:
            response = errorDialect.response(for: unmatched ?? .notFound)
        case .malformed(let error):
            response = errorDialect.response(for: error)
        }
        response.headers.set(RequestIDs.headerName, request.requestID)
        return response
    }
}

/// The one place errors become responses.
public enum ErrorResponder {
    /// The response for `error` thrown while handling `request`: its own if it is an
    /// ``HTTPResponseError``, `dialect`'s wording of an ``HTTPError``, otherwise a bare 500 (in `dialect`) whose
    /// details go to the log only.
    public static func response(for error: any Error, request: Request, dialect: HTTPErrorDialect) -> Response {
        if let known = error as? any HTTPResponseError {
            return known.makeResponse()
        }
        if let http = error as? HTTPError {
            return dialect.response(for: http)
        }
        request.logger.error(
            "unexpected error",
            [
                "route": .string(request.route),
                "errorType": .string(String(reflecting: type(of: error))),
                "error": .string(LogScrubber.maskDigitRuns(String(describing: error))),
            ]
        )
        return dialect.response(for: .internalError)
    }
}
