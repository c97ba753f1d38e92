import CCurl
import CCurlShims
import Foundation
public import VaultCore

/// Settings of the outbound client: trust, timeouts, size caps and where it may connect.
public struct OutboundHTTPConfiguration: Sendable, Equatable {
    /// Extra CA certificates (PEM) trusted besides the system's.
    public var caFile: String?
    /// The system CA directory (hashed, as `update-ca-certificates` writes it); libcurl's built-in one when nil.
    public var systemCADirectory: String?
    public var connectTimeoutMilliseconds: Int
    /// The whole exchange, connection to last body byte.
    public var timeoutMilliseconds: Int
    /// Largest answer body received; a larger one fails the request.
    public var maxResponseBytes: Int
    /// Most requests in flight at once; more are refused as ``OutboundHTTPError/Code/busy``.
    public var maxConcurrentTransfers: Int
    public var addressPolicy: AddressPolicy
    /// Sent as `User-Agent` unless the request has its own.
    public var userAgent: String

    public init(
        caFile: String? = nil, systemCADirectory: String? = nil, connectTimeoutMilliseconds: Int = 5_000,
        timeoutMilliseconds: Int = 30_000, maxResponseBytes: Int = 1 << 20, maxConcurrentTransfers: Int = 64,
        addressPolicy: AddressPolicy = AddressPolicy(), userAgent: String = "CardVault-Forward/1"
    ) {
        self.caFile = caFile
        self.systemCADirectory = systemCADirectory
        self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
        self.timeoutMilliseconds = timeoutMilliseconds
        self.maxResponseBytes = maxResponseBytes
        self.maxConcurrentTransfers = maxConcurrentTransfers
        self.addressPolicy = addressPolicy
        self.userAgent = userAgent
    }
}

/// One request header. The value may hold card data, so it lives in a ``WipedBuffer``.
public struct OutboundHeader: Sendable {
    public var name: String
    public var value: WipedBuffer

    public init(name: String, value: WipedBuffer) {
        self.name = name
        self.value = value
    }
}

/// A request to send: the destination, the addresses it was checked to resolve to (libcurl connects to these
/// only), method, headers and body.
public struct OutboundRequest: Sendable {
    public var url: DestinationURL
    public var addresses: [IPAddress]
    public var method: String
    public var headers: [OutboundHeader]
    public var body: WipedBuffer?

    public init(
        url: DestinationURL, addresses: [IPAddress], method: String, headers: [OutboundHeader] = [],
        body: WipedBuffer? = nil
    ) {
        self.url = url
        self.addresses = addresses
        self.method = method
        self.headers = headers
        self.body = body
    }

    /// Methods the client sends.
    public static let methods: Set<String> = ["GET", "POST", "PUT", "PATCH", "DELETE"]
}

/// The destination's answer. Header lines and body stay in wiped buffers until the caller has scrubbed them.
public struct OutboundResponse: Sendable {
    public var status: Int
    /// The final response's header lines (`Name: value\r\n` each), without the status line.
    public var headerLines: WipedBuffer
    /// The body, decoded from any content encoding libcurl supports.
    public var body: WipedBuffer
    /// Seconds from start to the last byte.
    public var duration: Double

    /// The header lines as (name, value) pairs, in order, names as sent.
    public static func parseHeaderLines(_ text: String) -> [(String, String)] {
        var headers: [(String, String)] = []
        for line in text.split(whereSeparator: { $0 == "\r\n" || $0 == "\n" || $0 == "\r" }) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if !name.isEmpty { headers.append((name, value)) }
        }
        return headers
    }
}

/// An HTTPS client over libcurl's multi interface: one thread drives every transfer (connections and TLS
/// sessions are reused between requests to the same destination), callers await their answer.
///
/// Every transfer is https only, verifies the peer against the system CAs plus ``OutboundHTTPConfiguration/caFile``,
/// follows no redirect, uses no proxy, is bounded by the timeouts and the body cap, and connects only to the
/// addresses its request names; libcurl's open-socket callback checks each address against the policy once more
/// just before connecting. libcurl frees through wiping allocation functions (see `cv_curl.c`).
///
/// A ``Service``: `run()` drives transfers until cancelled, then fails the ones in flight and returns.
public final class OutboundHTTPClient: Service {
    public let name = "outbound-http"
    public let configuration: OutboundHTTPConfiguration
    private let resolver: any HostResolving
    private let state = Locked(LoopState())

    /// The multi handle while the loop runs (woken from other threads, which libcurl allows).
    private struct MultiHandle: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
    }

    private struct LoopState: Sendable {
        var multi: MultiHandle?
        var accepting = false
        var stopping = false
        var pending: [Transfer] = []
        var inFlight = 0
    }

    public init(configuration: OutboundHTTPConfiguration, resolver: any HostResolving = SystemHostResolver()) {
        self.configuration = configuration
        self.resolver = resolver
    }

    /// Resolves the destination's host and checks every address against the policy.
    /// - Throws: ``OutboundHTTPError`` `.unresolvable`, or `.addressRefused` when any address is refused.
    public func checkedAddresses(for url: DestinationURL) async throws(OutboundHTTPError) -> [IPAddress] {
        let addresses = try await resolver.addresses(of: url.bareHost)
        guard addresses.allSatisfy(configuration.addressPolicy.allows) else {
            throw OutboundHTTPError(.addressRefused, "the destination resolves to an address that is not allowed")
        }
        return addresses
    }

    /// Sends `request` and waits for the whole answer.
    /// - Throws: ``OutboundHTTPError``.
    public func send(_ request: OutboundRequest) async throws(OutboundHTTPError) -> OutboundResponse {
        guard OutboundRequest.methods.contains(request.method) else {
            throw OutboundHTTPError(.invalidRequest, "the method is not supported")
        }
        guard !request.addresses.isEmpty, request.addresses.allSatisfy(configuration.addressPolicy.allows) else {
            throw OutboundHTTPError(.addressRefused, "the destination's address is not allowed")
        }
        // Plain http only to special-purpose addresses the operator allowed (a development receiver).
        guard request.url.scheme == "https" || request.addresses.allSatisfy(AddressPolicy.isSpecial) else {
            throw OutboundHTTPError(.addressRefused, "plain http is only sent to allowed private addresses")
        }
        let result: Result<OutboundResponse, OutboundHTTPError> = await withCheckedContinuation { continuation in
            let transfer = Transfer(request: request, configuration: configuration, continuation: continuation)
            let refusal = state.withLock { state -> OutboundHTTPError? in
                guard state.accepting, let multi = state.multi else {
                    return OutboundHTTPError(.notRunning, "the outbound client is not running")
                }
                guard state.inFlight < configuration.maxConcurrentTransfers else {
                    return OutboundHTTPError(.busy, "too many outbound requests are in flight")
                }
                state.inFlight += 1
                state.pending.append(transfer)
                curl_multi_wakeup(multi.pointer)
                return nil
            }
            if let refusal { continuation.resume(returning: .failure(refusal)) }
        }
        return try result.get()
    }

    /// Whether `run()` is driving transfers (requests are accepted).
    public var isRunning: Bool { state.withLock { $0.accepting && $0.multi != nil } }

    /// Requests in flight now.
    public var inFlight: Int { state.withLock { $0.inFlight } }

    public func run() async throws {
        guard cv_curl_global_init_wiping() == CURLE_OK, let multi = curl_multi_init() else {
            throw OutboundHTTPError(.notRunning, "libcurl could not be initialised")
        }
        _ = cv_curl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, 64)
        let handle = MultiHandle(pointer: multi)
        state.withLock { state in
            state.multi = handle
            state.accepting = !state.stopping
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread.named("cv-outbound") { [self] in
                    loop(handle.pointer)
                    done.resume()
                }.start()
            }
        } onCancel: {
            stop()
        }
        curl_multi_cleanup(multi)
    }

    /// Stops accepting requests and ends the loop (also what cancelling `run()` does).
    public func stop() {
        state.withLock { state in
            state.stopping = true
            state.accepting = false
            if let multi = state.multi { curl_multi_wakeup(multi.pointer) }
        }
    }

    private func loop(_ multi: UnsafeMutableRawPointer) {
        var active: [UnsafeMutableRawPointer: Transfer] = [:]
        while true {
            let (incoming, stopping) = state.withLock { state in
                let incoming = state.pending
                state.pending = []
                return (incoming, state.stopping)
            }
            for transfer in incoming {
                if let easy = transfer.start() {
                    curl_multi_add_handle(multi, easy)
                    active[easy] = transfer
                } else {
                    finish(transfer, code: CURLE_FAILED_INIT)
                }
            }
            if stopping {
                for (easy, transfer) in active {
                    curl_multi_remove_handle(multi, easy)
                    finish(transfer, failure: OutboundHTTPError(.notRunning, "the daemon is shutting down"))
                }
                state.withLock { $0.multi = nil }
                return
            }
            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                    let transfer = active.removeValue(forKey: easy)
                else { continue }
                let code = cv_curl_message_result(message)
                curl_multi_remove_handle(multi, easy)
                finish(transfer, code: code)
            }
            curl_multi_poll(multi, nil, 0, 1000, nil)
        }
    }

    private func finish(_ transfer: Transfer, code: CURLcode) {
        let result = transfer.result(code)
        transfer.close()
        state.withLock { $0.inFlight -= 1 }
        transfer.continuation.resume(returning: result)
    }

    private func finish(_ transfer: Transfer, failure: OutboundHTTPError) {
        transfer.close()
        state.withLock { $0.inFlight -= 1 }
        transfer.continuation.resume(returning: .failure(failure))
    }
}

/// One request on its way: the easy handle and its lists, the buffers it fills, what its callbacks saw. Touched
/// only by the loop thread once handed over.
final class Transfer: @unchecked Sendable {
    let request: OutboundRequest
    let configuration: OutboundHTTPConfiguration
    let continuation: CheckedContinuation<Result<OutboundResponse, OutboundHTTPError>, Never>
    let headerLines = WipedBuffer()
    let body = WipedBuffer()
    var easy: UnsafeMutableRawPointer?
    var headerList: UnsafeMutablePointer<curl_slist>?
    var resolveList: UnsafeMutablePointer<curl_slist>?
    var tooLarge = false
    var refusedAddress = false
    let started = Date()
    /// The URL and method strings libcurl points to (it copies strings, but these stay alive anyway).
    private var strings: [ContiguousArray<CChar>] = []

    init(
        request: OutboundRequest, configuration: OutboundHTTPConfiguration,
        continuation: CheckedContinuation<Result<OutboundResponse, OutboundHTTPError>, Never>
    ) {
        self.request = request
        self.configuration = configuration
        self.continuation = continuation
    }

    private func set(_ option: CURLoption, _ value: Int) -> Bool {
        cv_curl_setopt_long(easy, option, value) == CURLE_OK
    }

    private func set(_ option: CURLoption, _ text: String) -> Bool {
        let bytes = ContiguousArray(text.utf8CString)
        strings.append(bytes)
        return bytes.withUnsafeBufferPointer { cv_curl_setopt_pointer(easy, option, $0.baseAddress) } == CURLE_OK
    }

    /// Creates and configures the easy handle; nil when libcurl refused an option.
    func start() -> UnsafeMutableRawPointer? {
        guard let easy = curl_easy_init() else { return nil }
        self.easy = easy
        let me = Unmanaged.passUnretained(self).toOpaque()
        let url = request.url
        var ok = set(CURLOPT_URL, url.description)
        ok = ok && set(CURLOPT_PROTOCOLS_STR, url.scheme) && set(CURLOPT_REDIR_PROTOCOLS_STR, "https")
        ok = ok && set(CURLOPT_FOLLOWLOCATION, 0) && set(CURLOPT_NOSIGNAL, 1)
        ok = ok && set(CURLOPT_PROXY, "") && set(CURLOPT_NOPROXY, "*")
        ok = ok && set(CURLOPT_SSL_VERIFYPEER, 1) && set(CURLOPT_SSL_VERIFYHOST, 2)
        ok = ok && set(CURLOPT_SSLVERSION, Int(CURL_SSLVERSION_TLSv1_2))
        ok = ok && set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1))
        ok = ok && set(CURLOPT_CONNECTTIMEOUT_MS, configuration.connectTimeoutMilliseconds)
        ok = ok && set(CURLOPT_TIMEOUT_MS, configuration.timeoutMilliseconds)
        ok = ok && set(CURLOPT_ACCEPT_ENCODING, "")
        ok = ok && set(CURLOPT_USERAGENT, configuration.userAgent)
        if let caFile = configuration.caFile {
            // Both are used: the extra file and the system's hashed directory.
            let directory =
                configuration.systemCADirectory ?? cv_curl_default_ca_path().map { String(cString: $0) }
                ?? "/etc/ssl/certs"
            ok = ok && set(CURLOPT_CAINFO, caFile) && set(CURLOPT_CAPATH, directory)
        }
        // Pin the checked addresses: libcurl does no lookup of its own.
        let pinned =
            url.bareHost + ":" + String(url.port) + ":"
            + request.addresses.map(\.resolveText).joined(separator: ",")
        resolveList = curl_slist_append(nil, pinned)
        ok = ok && cv_curl_setopt_pointer(easy, CURLOPT_RESOLVE, resolveList) == CURLE_OK
        ok = ok && cv_curl_setopt_opensocket_callback(easy, Transfer.openSocket) == CURLE_OK
        ok = ok && cv_curl_setopt_pointer(easy, CURLOPT_OPENSOCKETDATA, me) == CURLE_OK
        ok = ok && cv_curl_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION, Transfer.receiveBody) == CURLE_OK
        ok = ok && cv_curl_setopt_pointer(easy, CURLOPT_WRITEDATA, me) == CURLE_OK
        ok = ok && cv_curl_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION, Transfer.receiveHeader) == CURLE_OK
        ok = ok && cv_curl_setopt_pointer(easy, CURLOPT_HEADERDATA, me) == CURLE_OK
        // Headers: the caller's, then no `Expect: 100-continue`.
        var list: UnsafeMutablePointer<curl_slist>?
        for header in request.headers {
            let line = WipedBuffer(capacity: header.name.utf8.count + 2 + header.value.count)
            line.append(contentsOf: header.name.utf8)
            line.append(contentsOf: ": ".utf8)
            line.append(header.value)
            list = line.withCString { curl_slist_append(list, $0) }
        }
        list = curl_slist_append(list, "Expect:")
        headerList = list
        ok = ok && cv_curl_setopt_pointer(easy, CURLOPT_HTTPHEADER, list) == CURLE_OK
        // Method and body.
        if let body = request.body {
            ok = ok && cv_curl_setopt_offset(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)) == CURLE_OK
            if let pointer = body.baseAddress, body.count > 0 {
                // Not copied: libcurl reads the wiped buffer itself.
                ok = ok && cv_curl_setopt_pointer(easy, CURLOPT_POSTFIELDS, pointer) == CURLE_OK
            } else {
                ok = ok && set(CURLOPT_COPYPOSTFIELDS, "")
            }
            if request.method != "POST" { ok = ok && set(CURLOPT_CUSTOMREQUEST, request.method) }
        } else if request.method == "GET" {
            ok = ok && set(CURLOPT_HTTPGET, 1)
        } else {
            ok = ok && set(CURLOPT_CUSTOMREQUEST, request.method)
        }
        return ok ? easy : nil
    }

    /// The outcome of the finished transfer.
    func result(_ code: CURLcode) -> Result<OutboundResponse, OutboundHTTPError> {
        let curlCode = Int(code.rawValue)
        func failure(_ kind: OutboundHTTPError.Code, _ message: String) -> Result<OutboundResponse, OutboundHTTPError> {
            .failure(OutboundHTTPError(kind, message, curlCode: curlCode))
        }
        switch code {
        case CURLE_OK:
            var status = 0
            _ = cv_curl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
            return .success(
                OutboundResponse(
                    status: status, headerLines: headerLines, body: body,
                    duration: Date().timeIntervalSince(started)))
        case CURLE_OPERATION_TIMEDOUT:
            return failure(
                .timeout,
                "the destination did not answer within the timeout (\(configuration.timeoutMilliseconds) ms in all, "
                    + "\(configuration.connectTimeoutMilliseconds) ms to connect)")
        case CURLE_COULDNT_CONNECT where refusedAddress:
            return failure(.addressRefused, "the destination's address is not allowed")
        case CURLE_COULDNT_CONNECT:
            return failure(.connectFailed, "no connection could be made to the destination")
        case CURLE_COULDNT_RESOLVE_HOST:
            return failure(.unresolvable, "the destination host cannot be resolved")
        case CURLE_PEER_FAILED_VERIFICATION:
            return failure(.tlsFailed, "the destination's certificate did not verify against the trusted CAs")
        case CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_USE_SSL_FAILED:
            return failure(.tlsFailed, "the TLS handshake with the destination failed")
        case CURLE_WRITE_ERROR where tooLarge:
            return failure(
                .responseTooLarge, "the destination's answer is larger than \(configuration.maxResponseBytes) bytes")
        case CURLE_FILESIZE_EXCEEDED:
            return failure(
                .responseTooLarge, "the destination's answer is larger than \(configuration.maxResponseBytes) bytes")
        default:
            return failure(.protocolError, "the exchange with the destination failed (libcurl code \(curlCode))")
        }
    }

    /// Frees the handle and lists (libcurl's free wipes them).
    func close() {
        if let easy { curl_easy_cleanup(easy) }
        easy = nil
        curl_slist_free_all(headerList)
        curl_slist_free_all(resolveList)
        headerList = nil
        resolveList = nil
    }

    static let receiveBody: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        data, size, count, context in
        guard let data, let context else { return 0 }
        let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
        let length = size * count
        if transfer.body.count + length > transfer.configuration.maxResponseBytes {
            transfer.tooLarge = true
            return 0
        }
        transfer.body.append(UnsafeRawPointer(data), length: length)
        return length
    }

    static let receiveHeader: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int =
        { data, size, count, context in
            guard let data, let context else { return 0 }
            let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
            let length = size * count
            // A status line starts the headers of a new response (after a 1xx): keep only the final one's.
            if length >= 5, memcmp(data, "HTTP/", 5) == 0 {
                transfer.headerLines.wipe()
                return length
            }
            if transfer.headerLines.count + length > 256 << 10 { return 0 }
            transfer.headerLines.append(UnsafeRawPointer(data), length: length)
            return length
        }

    static let openSocket:
        @convention(c) (UnsafeMutableRawPointer?, curlsocktype, UnsafeMutablePointer<curl_sockaddr>?) -> curl_socket_t =
            {
                context, _, address in
                guard let context, let address else { return cv_curl_socket_bad() }
                let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
                let allowed = withUnsafeMutablePointer(to: &address.pointee.addr) { socketAddress in
                    IPAddress(socketAddress: socketAddress).map {
                        transfer.configuration.addressPolicy.allows($0) && transfer.request.addresses.contains($0)
                    } ?? false
                }
                guard allowed else {
                    transfer.refusedAddress = true
                    return cv_curl_socket_bad()
                }
                return cv_curl_open_socket(address)
            }
}
