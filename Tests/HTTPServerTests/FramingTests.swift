import CardVaultTesting
import Foundation
import Testing
import VaultCore

@testable import HTTPServer

/// The checks on a request head, without a server.
struct RequestHeadTests {
    static func check(
        _ fields: [(String, String)], version: String = "HTTP/1.1", target: String = "/x", limit: Int = 1024
    )
        -> Result<RequestHead.Framing, HTTPError>
    {
        Result { () throws(HTTPError) in
            try RequestHead.check(
                version: version,
                target: target,
                headers: HTTPHeaders([("Host", "h")] + fields),
                maxBodyBytes: limit
            )
        }
    }

    static func status(_ result: Result<RequestHead.Framing, HTTPError>) -> Int? {
        if case .failure(let error) = result { return error.status.code }
        return nil
    }

    @Test func framingThatIsClearIsAccepted() throws {
        #expect(try Self.check([]).get() == .noBody)
        #expect(try Self.check([("Content-Length", "0")]).get() == .length(0))
        #expect(try Self.check([("Content-Length", "1024")]).get() == .length(1024))
        #expect(try Self.check([("Content-Length", "000017")]).get() == .length(17))
        // Repeated fields that agree are one length (RFC 9112 section 6.3).
        #expect(try Self.check([("Content-Length", "5"), ("Content-Length", "05")]).get() == .length(5))
        #expect(try Self.check([("Transfer-Encoding", "chunked")]).get() == .chunked)
        #expect(try Self.check([("Transfer-Encoding", "CHUNKED")]).get() == .chunked)
    }

    @Test(arguments: [
        ("9223372036854775808", 413),  // 2^63
        ("9223372036854775807", 413),  // Int.max
        ("18446744073709551616", 413),  // 2^64
        ("99999999999999999999999999999999", 413),
        ("1025", 413),
        ("-1", 400),
        ("+5", 400),
        ("5 ", 400),
        ("0x10", 400),
        ("", 400),
        ("5, 5", 400),
        ("abc", 400),
    ])
    func contentLengthOutOfRangeOrMalformedIsRefused(value: String, status: Int) {
        #expect(Self.status(Self.check([("Content-Length", value)])) == status)
    }

    @Test func conflictingContentLengthsAre400() {
        #expect(Self.status(Self.check([("Content-Length", "3"), ("Content-Length", "4")])) == 400)
        #expect(Self.status(Self.check([("Content-Length", "3"), ("Content-Length", "x")])) == 400)
    }

    @Test(arguments: [
        ("identity", 501),
        ("gzip, chunked", 501),
        ("gzip", 501),
        ("chunked, gzip", 501),
        ("x-custom", 501),
        ("deflate;q=1, chunked", 501),
        ("chunked, chunked", 400),
        ("chunked;ext=1", 400),
        ("", 400),
        (" , ", 400),
        ("chunked ", 400),  // libmicrohttpd would not decode it: stalled, so refused
        ("chunked,", 400),
        ("chu\"nked", 400),
        (";x", 400),
    ])
    func transferCodingsOtherThanOneChunkedAreRefused(value: String, status: Int) {
        #expect(Self.status(Self.check([("Transfer-Encoding", value)])) == status)
    }

    @Test func framingByBothOrByTransferEncodingOnHTTP10IsRefused() throws {
        #expect(Self.status(Self.check([("Transfer-Encoding", "chunked"), ("Content-Length", "3")])) == 400)
        #expect(Self.status(Self.check([("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "chunked")])) == 400)
        #expect(Self.status(Self.check([("Transfer-Encoding", "gzip"), ("Transfer-Encoding", "chunked")])) == 501)
        #expect(Self.status(Self.check([("Transfer-Encoding", "chunked")], version: "HTTP/1.0")) == 411)
        #expect(try Self.check([("Content-Length", "3")], version: "HTTP/1.0").get() == .length(3))
    }

    @Test func hostAndTargetAreChecked() throws {
        let noHost = Result { () throws(HTTPError) in
            try RequestHead.check(version: "HTTP/1.1", target: "/", headers: HTTPHeaders(), maxBodyBytes: 10)
        }
        #expect(Self.status(noHost) == 400)
        let http10 = Result { () throws(HTTPError) in
            try RequestHead.check(version: "HTTP/1.0", target: "/", headers: HTTPHeaders(), maxBodyBytes: 10)
        }
        #expect(try http10.get() == .noBody)
        #expect(Self.status(Self.check([("Host", "other")])) == 400)
        #expect(Self.status(Self.check([], target: "/a b")) == 400)
        #expect(Self.status(Self.check([], target: "/a\tb")) == 400)
    }
}

/// Every request gets a status line, fast: the head limits, the per-connection memory they imply,
/// and odd framing, against a live server.
@Suite(.serialized) struct FramingLiveTests {
    static func router() -> Router {
        var router = Router()
        router.addImmediate(.get, "/health") { _ in .json(text: #"{"status":"ok"}"#) }
        // How many query fields and cookies arrived, so tests see the request was read whole.
        router.get("/count") { request in
            let cookies = request.headers["Cookie"].map { $0.split(separator: ";").count } ?? 0
            return .text("\(try request.query().pairs.count) \(cookies) \(request.headers.count)")
        }
        router.post("/echo") { request in .text(String(request.body.count)) }
        router.get("/big-head") { _ in
            Response(
                status: .ok, headers: ["X-Big": String(repeating: "b", count: ServerConfiguration.responseHeadBytes)])
        }
        return router
    }

    /// Sends `raw` on a fresh connection and reads the first response, timing it.
    static func ask(_ port: Int, _ raw: [UInt8]) async throws -> (response: RawResponse, seconds: Double) {
        try await blocking {
            let client = try RawHTTPClient(port: port, timeoutSeconds: 5)
            let start = ContinuousClock.now
            client.send(raw)
            let response = try client.readResponse()
            let elapsed = ContinuousClock.now - start
            return (response, Double(elapsed.components.attoseconds) / 1e18 + Double(elapsed.components.seconds))
        }
    }

    static func ask(_ port: Int, _ raw: String) async throws -> (response: RawResponse, seconds: Double) {
        try await ask(port, Array(raw.utf8))
    }

    static func get(_ target: String, _ fields: String = "") -> String {
        "GET \(target) HTTP/1.1\r\nHost: localhost\r\n\(fields)\r\n"
    }

    /// A GET head of exactly `bytes` bytes: a request line, Host, `cookies` cookie pairs and
    /// `fields` more header fields, the last one padded.
    static func head(bytes: Int, fields: Int, cookies: Int) -> String {
        var text = "GET /count HTTP/1.1\r\nHost: localhost\r\n"
        if cookies > 0 {
            text += "Cookie: " + (0..<cookies).map { "c\($0)=v" }.joined(separator: "; ") + "\r\n"
        }
        for index in 0..<fields - 1 { text += "X-F\(index): v\r\n" }
        let used = text.utf8.count + "X-Pad: \r\n\r\n".utf8.count
        precondition(used <= bytes, "head too small for its fields")
        return text + "X-Pad: " + String(repeating: "p", count: bytes - used) + "\r\n\r\n"
    }

    @Test func twoHundredQueryParametersAreReadWhole() async throws {
        try await withLiveServer(ServerConfiguration(port: 0), router: Self.router()) { port in
            let query = (0..<200).map { "p\($0)=\($0)" }.joined(separator: "&")
            let (response, seconds) = try await Self.ask(port, Self.get("/count?" + query))
            #expect(response.status == 200)
            #expect(response.text.hasPrefix("200 0 "))
            #expect(seconds < 1)
            // 4000 empty parameters: libmicrohttpd would have needed 256 KiB of records for them.
            let empty = try await Self.ask(port, Self.get("/count?" + String(repeating: "&", count: 4000)))
            #expect(empty.response.status == 200)
        }
    }

    /// The worst head the limits allow (every byte and every field used, half of them cookie pairs
    /// whose header libmicrohttpd copies) is served; one byte or one field more is a 431 of ours.
    @Test(arguments: [2048, 8192, 32768])
    func everyHeadWithinTheLimitsFitsTheConnectionMemory(limit: Int) async throws {
        let configuration = ServerConfiguration(port: 0, maxHeaderBytes: limit)
        let fields = configuration.maxHeaderFields
        try await withLiveServer(configuration, router: Self.router()) { port in
            // Host and Cookie are fields too.
            let fullest = Self.head(bytes: limit, fields: fields / 2 - 1, cookies: fields / 2 - 1)
            let served = try await Self.ask(port, fullest)
            #expect(served.response.status == 200)
            #expect(served.response.text == "0 \(fields / 2 - 1) \(fields / 2 + 1)")

            let oneByteMore = try await Self.ask(port, Self.head(bytes: limit + 1, fields: 4, cookies: 0))
            #expect(oneByteMore.response.status == 431)
            #expect(oneByteMore.response.text.contains("headers_too_large"))
            #expect(oneByteMore.response.header("X-Request-Id") != nil)
            #expect(oneByteMore.response.header("Connection")?.lowercased() == "close")

            let oneFieldMore = try await Self.ask(
                port, Self.head(bytes: limit, fields: fields / 2, cookies: fields / 2 - 1))
            #expect(oneFieldMore.response.status == 431)
            #expect(oneFieldMore.response.text.contains("header fields and cookies"))
        }
    }

    @Test func headsJustUnderAndOverTheDefaultLimit() async throws {
        try await withLiveServer(ServerConfiguration(port: 0), router: Self.router()) { port in
            let under = try await Self.ask(port, Self.head(bytes: 8192, fields: 3, cookies: 0))
            #expect(under.response.status == 200)
            for size in [8193, 12_000, 50_000] {
                let over = try await Self.ask(
                    port, Self.get("/health", "X-Filler: \(String(repeating: "f", count: size))\r\n"))
                #expect(over.response.status == 431)
                #expect(over.seconds < 1)
            }
            let longLine = try await Self.ask(port, Self.get("/health?" + String(repeating: "q", count: 9000)))
            #expect(longLine.response.status == 414)
            #expect(longLine.response.text.contains("uri_too_long"))
            #expect(try await exchange(port: port, [Self.get("/health")])[0].status == 200)
        }
    }

    @Test func cookiesAreCountedNotAllowedToExhaustTheMemory() async throws {
        try await withLiveServer(ServerConfiguration(port: 0), router: Self.router()) { port in
            let pairs = (0..<100).map { "c\($0)=v\($0)" }.joined(separator: "; ")
            let served = try await Self.ask(port, Self.get("/count", "Cookie: \(pairs)\r\n"))
            #expect(served.response.status == 200)
            #expect(served.response.text == "0 100 2")

            let many = (0..<700).map { "c\($0)=v" }.joined(separator: "; ")
            let counted = try await Self.ask(port, Self.get("/count", "Cookie: \(many)\r\n"))
            #expect(counted.response.status == 431)

            // 8000 empty cookie pairs ask libmicrohttpd for 500 KiB; it refuses them itself (with
            // its 431 written twice, a 0.9.75 defect; the first is a complete answer).
            let empty = try await Self.ask(
                port, Self.get("/count", "Cookie: \(String(repeating: ";", count: 8000))\r\n"))
            #expect(empty.response.status == 431)
            #expect(empty.seconds < 1)

            // Thousands of tiny header fields: libmicrohttpd's own 431.
            let tiny = try await Self.ask(port, Self.get("/count", String(repeating: "a:\r\n", count: 2000)))
            #expect(tiny.response.status == 431)
            #expect(try await exchange(port: port, [Self.get("/health")])[0].status == 200)
        }
    }

    static let framingCases: [(String, Int)] = [
        ("Transfer-Encoding: identity\r\n", 501),
        ("Transfer-Encoding: gzip, chunked\r\n", 501),
        ("Transfer-Encoding: gzip\r\n", 501),
        ("Transfer-Encoding: chunked, chunked\r\n", 400),
        ("Transfer-Encoding: chunked \r\n", 400),
        ("Transfer-Encoding: \r\n", 400),
        ("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", 400),
        ("Content-Length: 9223372036854775808\r\n", 413),
        ("Content-Length: 9223372036854775807\r\n", 413),
        ("Content-Length: 18446744073709551616\r\n", 413),
        ("Content-Length: 1025\r\n", 413),
        ("Content-Length: -1\r\n", 400),
        ("Content-Length: abc\r\n", 400),
        ("Content-Length: 3\r\nContent-Length: 4\r\n", 400),
        ("Content-Length: 3, 3\r\n", 400),
    ]

    /// Odd framing is answered before any body byte is sent, at once (it used to stall 30 s).
    @Test func oddFramingGetsItsStatusAtOnce() async throws {
        try await withLiveServer(ServerConfiguration(port: 0, maxBodyBytes: 1024), router: Self.router()) { port in
            for (fields, status) in Self.framingCases {
                let (response, seconds) = try await Self.ask(
                    port, "POST /echo HTTP/1.1\r\nHost: localhost\r\n\(fields)\r\n")
                #expect(response.status == status, "\(fields)")
                #expect(seconds < 1, "\(fields)")
                #expect(response.header("Connection")?.lowercased() == "close", "\(fields)")
            }
            let http10 = try await Self.ask(port, "POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
            #expect(http10.response.status == 411)
            let twoHosts = try await Self.ask(port, Self.get("/health", "Host: other\r\n"))
            #expect(twoHosts.response.status == 400)
            let space = try await Self.ask(port, "GET /hea lth HTTP/1.1\r\nHost: localhost\r\n\r\n")
            #expect(space.response.status == 400)

            // What is well framed still works, on the same server.
            let same = try await Self.ask(
                port, "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc")
            #expect(same.response.text == "3")
            let chunked = try await Self.ask(
                port,
                "POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
            #expect(chunked.response.text == "3")
            let http10Length = try await Self.ask(port, "POST /echo HTTP/1.0\r\nContent-Length: 2\r\n\r\nab")
            #expect(http10Length.response.text == "2")
        }
    }

    @Test func aResponseHeadTooLargeForTheConnectionMemoryIsA500() async throws {
        try await withLiveServer(ServerConfiguration(port: 0), router: Self.router()) { port in
            let responses = try await exchange(port: port, [Self.get("/big-head"), Self.get("/health")])
            #expect(responses[0].status == 500)
            #expect(responses[0].header("X-Big") == nil)
            #expect(responses[1].status == 200)
        }
    }

    @Test func manyPipelinedRequestsWithLargeHeadsAreAllAnswered() async throws {
        try await withLiveServer(ServerConfiguration(port: 0), router: Self.router()) { port in
            let count = 20
            let statuses = try await blocking { () -> [Int] in
                let client = try RawHTTPClient(port: port)
                client.send(
                    String(
                        repeating: Self.get("/health", "X-F: \(String(repeating: "f", count: 7000))\r\n"), count: count)
                )
                return try (0..<count).map { _ in try client.readResponse().status }
            }
            #expect(statuses == Array(repeating: 200, count: count))
        }
    }
}
