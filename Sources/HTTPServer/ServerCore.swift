import CHTTPShims
import CMicroHTTPD
import Dispatch
import Foundation
import Synchronization
import VaultCore

/// The state libmicrohttpd's callbacks reach through their `cls` pointer: routes, limits, logger,
/// metrics and the counts shutdown waits on.
final class ServerCore: Sendable {
    let configuration: ServerConfiguration
    let router: Router
    let logger: Logger
    let requestIDs = RequestIDs()
    /// Series per route, indexed like `router.routes`.
    let routeSeries: [RouteSeries]
    /// Series for requests that matched no route, by method label.
    let unmatchedSeries: [String: RouteSeries]
    let logRequests: Bool
    let requireClientCertificate: Bool
    /// `Strict-Transport-Security` on every response when serving TLS, nil over plain HTTP.
    let strictTransportSecurity: String?

    /// One year; no `includeSubDomains` (the daemon does not speak for its siblings' names).
    static let strictTransportSecurityValue = "max-age=31536000"

    /// Requests begun and not yet finished (what graceful shutdown waits for).
    let inFlight = Atomic<Int>(0)
    /// Requests whose handler task is running with its connection suspended.
    let suspended = Atomic<Int>(0)
    /// Set while shutting down: responses ask clients to close.
    let draining = Atomic<Bool>(false)

    /// ``ServerConfiguration/requestDeadlineSeconds`` in nanoseconds (0: none).
    let requestDeadlineNanos: UInt64
    let metrics: HTTPMetrics
    /// When the last "connections refused" warning was logged (monotonic nanoseconds), and how many
    /// refusals it has not reported yet: one line per interval, never one per connection (a flood
    /// from one address would otherwise flood the log too).
    let refusalsLoggedAt = Atomic<UInt64>(0)
    let refusalsUnreported = Atomic<Int>(0)
    static let refusalLogIntervalNanos: UInt64 = 10_000_000_000

    static let methodLabels: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    init(configuration: ServerConfiguration, router: Router, logger: Logger, metrics: HTTPMetrics) {
        self.configuration = configuration
        self.router = router
        self.logger = logger
        self.routeSeries = router.routes.map { metrics.series(method: $0.method.rawValue, route: $0.pattern) }
        var unmatched: [String: RouteSeries] = [:]
        for method in Self.methodLabels.union(["OTHER"]) {
            unmatched[method] = metrics.series(method: method, route: HTTPMetrics.unmatchedRoute)
        }
        self.unmatchedSeries = unmatched
        self.logRequests = logger.minimumLevel <= .info
        self.requireClientCertificate = configuration.tls?.clientCAPEM != nil
        self.strictTransportSecurity = configuration.tls == nil ? nil : Self.strictTransportSecurityValue
        self.requestDeadlineNanos = UInt64(max(0, configuration.requestDeadlineSeconds)) * 1_000_000_000
        self.metrics = metrics
    }

    /// libmicrohttpd closed a connection at a connection limit: count it, and warn at most once per
    /// ``refusalLogIntervalNanos`` with the number refused since the last warning.
    func connectionRefused() {
        metrics.refusedConnections.add(1, ordering: .relaxed)
        refusalsUnreported.add(1, ordering: .relaxed)
        let now = monotonicNanos()
        let last = refusalsLoggedAt.load(ordering: .relaxed)
        guard last == 0 || now &- last >= Self.refusalLogIntervalNanos,
            refusalsLoggedAt.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged
        else { return }
        let count = refusalsUnreported.exchange(0, ordering: .relaxed)
        logger.warning(
            "connections refused at the connection limit (in all or per address)",
            [
                "refused": .int(count), "maxConnections": .int(configuration.maxConnections),
                "maxConnectionsPerAddress": .int(configuration.maxConnectionsPerAddress),
            ])
    }

    /// Nanoseconds left before `context`'s deadline (nil when there is none; 0 when it has passed).
    func deadlineLeft(_ context: RequestContext) -> UInt64? {
        guard requestDeadlineNanos > 0 else { return nil }
        let elapsed = monotonicNanos() &- context.start
        return elapsed >= requestDeadlineNanos ? 0 : requestDeadlineNanos - elapsed
    }

    // MARK: - Access handler

    func handle(
        connection: OpaquePointer,
        method: UnsafePointer<CChar>?,
        version: UnsafePointer<CChar>?,
        uploadData: UnsafePointer<CChar>?,
        uploadDataSize: UnsafeMutablePointer<Int>,
        slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        let context: RequestContext
        if let raw = slot.pointee {
            context = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()
        } else {
            context = begin(target: "/")
            slot.pointee = Unmanaged.passRetained(context).toOpaque()
        }
        switch context.phase {
        case .new:
            return headersReceived(context, connection, method, version)
        case .receiving:
            let size = uploadDataSize.pointee
            if size > 0 {
                uploadDataSize.pointee = 0
                // Past the deadline the rest of the body is not waited for: the connection is cut
                // (libmicrohttpd cannot answer before the body is read).
                if deadlineLeft(context) == 0 { return MHD_Result.NO }
                return receive(context, uploadData, size)
            }
            if context.shortenedTimeout {
                cv_mhd_set_connection_timeout(connection, UInt32(max(0, configuration.connectionTimeoutSeconds)))
            }
            return requestReceived(context, connection)
        case .waiting:
            guard let response = context.pendingResponse else { return MHD_Result.NO }
            context.pendingResponse = nil
            return queue(response, context, connection)
        case .answered:
            return MHD_Result.YES
        }
    }

    /// A request line arrived: the request's context starts here (it also times the request).
    func begin(target: String) -> RequestContext {
        inFlight.add(1, ordering: .relaxed)
        return RequestContext(target: target, start: monotonicNanos())
    }

    /// First callback: headers are in. Route, check limits and framing, and wait for the body
    /// (answering here would make libmicrohttpd close the connection), unless the request is
    /// refused outright.
    private func headersReceived(
        _ context: RequestContext,
        _ connection: OpaquePointer,
        _ method: UnsafePointer<CChar>?,
        _ version: UnsafePointer<CChar>?
    ) -> MHD_Result {
        context.phase = .receiving
        context.method = method.map { HTTPMethod(String(cString: $0)) } ?? .get
        let version = version.map { String(cString: $0) } ?? ""
        context.headerBytes = context.target.utf8.count + context.method.rawValue.utf8.count + 12
        // Counting first (a walk over libmicrohttpd's list) sizes the fields' storage once.
        context.headers.reserveCapacity(Int(MHD_get_connection_values_n(connection, .HEADER_KIND, nil, nil)))
        _ = MHD_get_connection_values_n(
            connection,
            .HEADER_KIND,
            headerCallback,
            Unmanaged.passUnretained(context).toOpaque()
        )
        context.requestID = requestIDs.accept(context.headers[RequestIDs.headerName])

        let path = context.path
        switch router.match(context.method, path: path) {
        case .found(let route, let parameters):
            context.route = route
            context.parameters = parameters
            context.series = routeSeries[route.index]
        case .methodNotAllowed(let allowed):
            context.refusal = router.unmatched ?? HTTPError.methodNotAllowed(allowed: allowed)
        case .notFound:
            context.refusal = router.unmatched ?? HTTPError.notFound
        case .malformed(let error):
            context.refusal = error
        }
        if context.series == nil {
            let label = Self.methodLabels.contains(context.method.rawValue) ? context.method.rawValue : "OTHER"
            context.series = unmatchedSeries[label]
        }

        // The head as received (libmicrohttpd counts it; the sum of the fields is the fallback).
        let received = cv_mhd_request_header_size(connection)
        let headBytes = received > 0 ? received : context.headerBytes
        let requestLineBytes = context.method.rawValue.utf8.count + context.target.utf8.count + version.utf8.count + 4
        if requestLineBytes > configuration.maxHeaderBytes {
            return refuse(HTTPError.uriTooLong(limit: configuration.maxHeaderBytes), context, connection)
        }
        if headBytes > configuration.maxHeaderBytes {
            return refuse(HTTPError.headersTooLarge(limit: configuration.maxHeaderBytes), context, connection)
        }
        let cookies = Int(MHD_get_connection_values_n(connection, .COOKIE_KIND, nil, nil))
        if context.headers.count + cookies > configuration.maxHeaderFields {
            let refusal = HTTPError(
                .headersTooLarge,
                status: .headerFieldsTooLarge,
                message: "Request carries more than \(configuration.maxHeaderFields) header fields and cookies"
            )
            return refuse(refusal, context, connection)
        }
        if deadlineLeft(context) == 0 {
            return refuse(HTTPError.requestTimeout(limit: configuration.requestDeadlineSeconds), context, connection)
        }
        if requireClientCertificate && cv_mhd_client_certificate_verified(connection) != 1 {
            let refusal = HTTPError(.forbidden, status: .forbidden, message: "A valid client certificate is required")
            return refuse(refusal, context, connection)
        }
        // Framing is decided before a byte of the body is read, so an unclear or oversized body is
        // refused at once instead of waited for.
        let framing: RequestHead.Framing
        do throws(HTTPError) {
            framing = try RequestHead.check(
                version: version,
                target: context.target,
                headers: context.headers,
                maxBodyBytes: configuration.maxBodyBytes
            )
        } catch {
            return refuse(error, context, connection)
        }
        if case .length(let length) = framing, length > 0 { context.body.reserveCapacity(length) }
        if framing != .noBody && framing != .length(0), let left = deadlineLeft(context) {
            // A body is coming: a stall longer than the time left ends the connection at the deadline.
            let seconds = Int((left + 999_999_999) / 1_000_000_000)
            if seconds < configuration.connectionTimeoutSeconds {
                cv_mhd_set_connection_timeout(connection, UInt32(max(1, seconds)))
                context.shortenedTimeout = true
            }
        }
        return MHD_Result.YES
    }

    /// Answers `error` in the first callback; the connection closes after the answer (the body, if
    /// any, is never read).
    private func refuse(_ error: HTTPError, _ context: RequestContext, _ connection: OpaquePointer) -> MHD_Result {
        context.closeAfter = true
        return queue(router.errorDialect.response(for: error), context, connection)
    }

    /// A piece of the body. Past the limit (a chunked body that grows too long) the rest is counted
    /// and dropped, never buffered; far past it the connection is cut.
    private func receive(_ context: RequestContext, _ data: UnsafePointer<CChar>?, _ size: Int) -> MHD_Result {
        if context.bodyTooLarge || context.body.count + size > configuration.maxBodyBytes {
            if !context.bodyTooLarge {
                context.bodyTooLarge = true
                context.body = []
            }
            context.discardedBytes += size
            return context.discardedBytes > 4 * configuration.maxBodyBytes ? MHD_Result.NO : MHD_Result.YES
        }
        if let data {
            context.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: size))
        }
        return MHD_Result.YES
    }

    /// The whole request is in: run its handler and answer.
    private func requestReceived(_ context: RequestContext, _ connection: OpaquePointer) -> MHD_Result {
        if context.bodyTooLarge {
            context.closeAfter = true
            return queue(
                router.errorDialect.response(for: .payloadTooLarge(limit: configuration.maxBodyBytes)), context,
                connection)
        }
        if let refusal = context.refusal {
            return queue(router.errorDialect.response(for: refusal), context, connection)
        }
        guard let route = context.route else {
            return queue(router.errorDialect.response(for: .notFound), context, connection)
        }
        let request = makeRequest(context, connection, route)
        switch route.body {
        case .immediate(let handler):
            let response: Response
            do {
                response = try handler(request)
            } catch {
                response = ErrorResponder.response(for: error, request: request, dialect: router.errorDialect)
            }
            return queue(response, context, connection)
        case .async(let handler):
            switch configuration.threadingMode {
            case .threadPerConnection:
                // This thread is libmicrohttpd's own (one per connection), never one of the concurrency pool, and
                // libmicrohttpd cannot suspend a connection in this mode: it waits for the handler's answer. The
                // daemon never runs this mode (it is not configurable); tests and benchmarks compare it.
                let answered = ThreadWakeup()
                let answer = Locked<Response?>(nil)
                Task {
                    let response = await LogContext.$requestID.withValue(request.requestID) {
                        await Self.invoke(handler, request, router.errorDialect)
                    }
                    answer.withLock { $0 = response }
                    answered.signal()
                }
                answered.wait()
                return queue(
                    answer.withLock { $0 } ?? router.errorDialect.response(for: .internalError), context, connection)
            case .eventLoop:
                MHD_suspend_connection(connection)
                context.phase = .waiting
                suspended.add(1, ordering: .relaxed)
                let suspendedConnection = SuspendedConnection(pointer: connection)
                Task {
                    // Every line the handler's services log carries this request's id (LogContext).
                    context.pendingResponse = await LogContext.$requestID.withValue(request.requestID) {
                        await Self.invoke(handler, request, router.errorDialect)
                    }
                    self.suspended.subtract(1, ordering: .releasing)
                    MHD_resume_connection(suspendedConnection.pointer)
                }
                return MHD_Result.YES
            }
        }
    }

    private static func invoke(_ handler: Handler, _ request: Request, _ dialect: HTTPErrorDialect) async -> Response {
        do {
            return try await handler(request)
        } catch {
            return ErrorResponder.response(for: error, request: request, dialect: dialect)
        }
    }

    private func makeRequest(_ context: RequestContext, _ connection: OpaquePointer, _ route: Router.Route) -> Request {
        // INET6_ADDRSTRLEN is 46; the text is made on the stack.
        let remote = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            let length = cv_mhd_client_address(connection, buffer.baseAddress!, buffer.count)
            return length > 0
                ? String(decoding: UnsafeRawBufferPointer(start: buffer.baseAddress, count: length), as: UTF8.self) : ""
        }
        let parts = context.targetParts
        var request = Request(
            method: context.method,
            path: parts.path,
            rawQuery: parts.rawQuery,
            headers: context.headers,
            body: context.body,
            remoteAddress: remote,
            requestID: context.requestID,
            logger: logger
        )
        context.body = []
        request.parameters = context.parameters
        request.route = route.pattern
        return request
    }

    /// Hands `response` to libmicrohttpd, with the request id (and `Connection: close` when the
    /// connection must not be reused).
    private func queue(_ response: Response, _ context: RequestContext, _ connection: OpaquePointer) -> MHD_Result {
        var response = response
        let headBytes = Self.headBytes(of: response, requestID: context.requestID)
        if headBytes > ServerConfiguration.responseHeadBytes {
            // libmicrohttpd would find no room for it in the connection's pool and close unanswered.
            logger.error(
                "response head too large; answered 500 instead",
                [
                    "requestId": .string(context.requestID),
                    "route": .string(context.route?.pattern ?? HTTPMetrics.unmatchedRoute),
                    "status": .int(response.status.code),
                    "headBytes": .int(headBytes),
                ]
            )
            response = router.errorDialect.response(for: .internalError)
        }
        context.phase = .answered
        context.status = response.status.code
        context.errorCode = response.errorCode
        let mhdResponse = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count,
                UnsafeMutableRawPointer(mutating: bytes.baseAddress),
                .RESPMEM_MUST_COPY
            )
        }
        guard let mhdResponse else { return MHD_Result.NO }
        defer { MHD_destroy_response(mhdResponse) }
        for field in response.headers where !HTTPHeaders.sameName(field.name, RequestIDs.headerName) {
            Self.add(field.name, field.value, to: mhdResponse)
        }
        Self.add(RequestIDs.headerName, context.requestID, to: mhdResponse)
        if let strictTransportSecurity {
            Self.add("Strict-Transport-Security", strictTransportSecurity, to: mhdResponse)
        }
        if context.closeAfter || draining.load(ordering: .relaxed) {
            Self.add("Connection", "close", to: mhdResponse)
        }
        return MHD_queue_response(connection, UInt32(response.status.code), mhdResponse)
    }

    /// Adds one header field to an MHD response (libmicrohttpd copies both texts). `withCString` lends a native
    /// string's own bytes; passing the `String` as the argument would copy each into a new array first.
    private static func add(_ name: String, _ value: String, to response: OpaquePointer) {
        name.withCString { name in
            value.withCString { value in _ = MHD_add_response_header(response, name, value) }
        }
    }

    /// The size of the head libmicrohttpd writes for `response`: the status line (with the longest
    /// reason phrase), its own Date, Content-Length and Connection fields, then ours.
    static func headBytes(of response: Response, requestID: String) -> Int {
        var bytes = 160 + RequestIDs.headerName.utf8.count + requestID.utf8.count + 4
        bytes += 27 + strictTransportSecurityValue.utf8.count + 4  // counted whether or not TLS is on
        for field in response.headers {
            bytes += field.name.utf8.count + field.value.utf8.count + 4
        }
        return bytes
    }

    // MARK: - Completion

    /// The request is over (answered and sent, or the connection failed): count and log it.
    func finish(_ context: RequestContext, termination: MHD_RequestTerminationCode) {
        let nanos = monotonicNanos() &- context.start
        inFlight.subtract(1, ordering: .releasing)
        guard context.status != 0 else {
            logger.debug(
                "request ended without an answer",
                ["requestId": .string(context.requestID), "termination": .int(Int(termination.rawValue))]
            )
            return
        }
        context.series?.record(status: context.status, nanoseconds: nanos)
        if logRequests {
            var fields: LogMetadata = [
                "requestId": .string(context.requestID),
                "method": .string(context.method.rawValue),
                "route": .string(context.route?.pattern ?? HTTPMetrics.unmatchedRoute),
                "status": .int(context.status),
                "durationMs": .double(Double(nanos / 1000) / 1000),
            ]
            // A refused request says why: the dialect's error code (never a value the client sent).
            if context.status >= 400, let code = context.errorCode { fields["error"] = .string(code) }
            logger.info("request", fields)
        }
    }
}

/// A suspended connection handed to the task that will resume it.
/// Unchecked Sendable: a libmicrohttpd connection pointer handed to the one task that resumes it, once.
struct SuspendedConnection: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// Carries a finished task's response back to a blocked thread.
/// Per-request state kept between libmicrohttpd's callbacks. It is touched by one connection's
/// thread at a time; while a handler task runs, the connection is suspended and only the task
/// writes `pendingResponse`, which the resumed callback then reads.
/// Unchecked Sendable: the one-thread-at-a-time rule above is libmicrohttpd's guarantee (callbacks of a connection
/// never overlap, a suspended connection gets none), which the compiler cannot see.
final class RequestContext: @unchecked Sendable {
    enum Phase {
        case new, receiving, waiting, answered
    }

    let target: String
    let start: UInt64
    var phase = Phase.new
    var method = HTTPMethod.get
    var headers = HTTPHeaders()
    var headerBytes = 0
    var body: [UInt8] = []
    var bodyTooLarge = false
    var discardedBytes = 0
    var requestID = ""
    var route: Router.Route?
    var parameters: [String: String] = [:]
    var refusal: HTTPError?
    var series: RouteSeries?
    var pendingResponse: Response?
    var status = 0
    /// The answer's ``Response/errorCode`` (logged with a 4xx or 5xx status).
    var errorCode: String?
    var closeAfter = false
    /// The connection's idle timeout was cut to the deadline's time left while the body arrives.
    var shortenedTimeout = false

    /// The request target split at its `?`, once (routing reads the path, the handler's request both parts).
    let targetParts: Request.TargetParts

    init(target: String, start: UInt64) {
        self.target = target
        self.start = start
        self.targetParts = Request.split(target)
    }

    /// The path part of the request target.
    var path: String { targetParts.path }
}

@inline(__always)
func monotonicNanos() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

// MARK: - C callbacks (cls is the ServerCore, unretained: the server outlives its daemon)

let accessHandlerCallback: MHD_AccessHandlerCallback = {
    cls, connection, _, method, version, uploadData, uploadDataSize, slot in
    guard let cls, let connection, let uploadDataSize, let slot else { return MHD_Result.NO }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    return core.handle(
        connection: connection,
        method: method,
        version: version,
        uploadData: uploadData,
        uploadDataSize: uploadDataSize,
        slot: slot
    )
}

let requestStartedCallback:
    @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?)
        -> UnsafeMutableRawPointer? = { cls, uri, _ in
            guard let cls else { return nil }
            let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
            let context = core.begin(target: uri.map { String(cString: $0) } ?? "/")
            return Unmanaged.passRetained(context).toOpaque()
        }

let requestCompletedCallback: MHD_RequestCompletedCallback = { cls, _, slot, termination in
    guard let cls, let slot, let raw = slot.pointee else { return }
    slot.pointee = nil
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    let context = Unmanaged<RequestContext>.fromOpaque(raw).takeRetainedValue()
    core.finish(context, termination: termination)
}

let headerCallback: MHD_KeyValueIteratorN = { cls, _, key, keySize, value, valueSize in
    guard let cls, let key else { return MHD_Result.YES }
    let context = Unmanaged<RequestContext>.fromOpaque(cls).takeUnretainedValue()
    let name = String(decoding: UnsafeRawBufferPointer(start: key, count: keySize), as: UTF8.self)
    let text = value.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: valueSize), as: UTF8.self) } ?? ""
    context.headers.add(name, text)
    context.headerBytes += keySize + valueSize + 4
    return MHD_Result.YES
}

let daemonLogCallback: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?) -> Void = { cls, message in
    guard let cls, let message else { return }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    let text = String(cString: message)
    if text.hasPrefix(LibmicrohttpdMessages.connectionLimit) {
        core.connectionRefused()
        return
    }
    core.logger.log(
        LibmicrohttpdMessages.level(of: text), "libmicrohttpd", ["detail": .string(LogScrubber.maskDigitRuns(text))])
}

/// How much a message of libmicrohttpd's own matters.
enum LibmicrohttpdMessages {
    /// Messages about a client that went away or broke off its connection (a closed tab, a port
    /// scanner, a client timeout, a failed TLS handshake): routine on a public port, so debug, not
    /// warning. Matched by libmicrohttpd 0.9.75's texts.
    static let connectionAborted = [
        "The connection was forcibly closed by remote peer",
        "Socket has been disconnected when reading request",
        "Connection socket is closed when reading request",
        "Connection was closed by remote side with incomplete request",
        "Failed to send data in request",
        "Failed to send the response headers",
        "Failed to send the response body",
        "Failed to send the chunked response body",
        "Failed to send the footers",
        "Error: received handshake message out of context",
        "Error: gnutls_handshake",
        "Error: Handshake failed",
        "Failed to receive data",
    ]

    /// Logged by libmicrohttpd 0.9.75 for every connection closed at the total or the per-address
    /// limit; counted and summarised instead (``ServerCore/connectionRefused()``).
    static let connectionLimit = "Server reached connection limit"

    static func level(of message: String) -> LogLevel {
        connectionAborted.contains { message.hasPrefix($0) || message.contains($0) } ? .debug : .warning
    }
}
