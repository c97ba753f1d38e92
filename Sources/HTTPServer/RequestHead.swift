/// The checks a request head must pass before a byte of its body is read: the Host field and the
/// framing of the body (RFC 9112 sections 3.2, 6 and 7).
///
/// libmicrohttpd 0.9.75 frames a body by the first `Transfer-Encoding` field if there is one (only
/// the exact value `chunked` is decoded; any other value makes it read until the client closes, so
/// the request stalls until the idle timeout) and otherwise by the first `Content-Length` field.
/// It refuses a `Content-Length` that is not all digits (400) or does not fit 64 bits (413) itself.
/// Everything else that would leave the body's length unclear is refused here, so that every such
/// request gets its answer at once and the connection closes after it.
enum RequestHead {
    /// How the body is delimited.
    enum Framing: Equatable {
        /// No body.
        case noBody
        /// `Content-Length` bytes.
        case length(Int)
        /// `Transfer-Encoding: chunked`.
        case chunked
    }

    /// Checks the head of a request.
    ///
    /// - Parameters:
    ///   - version: the protocol from the request line (`HTTP/1.1`).
    ///   - target: the request target as received.
    ///   - headers: every header field, in order.
    ///   - maxBodyBytes: the largest body accepted.
    /// - Returns: how the body is framed.
    /// - Throws: ``HTTPError``: 400 for a missing or repeated Host on HTTP/1.1, a space in the
    ///   target, or malformed or conflicting framing; 411 for `Transfer-Encoding` on HTTP/1.0 (whose
    ///   request bodies are framed by `Content-Length` only); 413 for a length over `maxBodyBytes`;
    ///   501 for a transfer coding other than `chunked`.
    static func check(
        version: String, target: String, headers: HTTPHeaders, maxBodyBytes: Int
    ) throws(HTTPError)
        -> Framing
    {
        let http10 = version == "HTTP/1.0"
        // One pass over the fields for the three names that matter here.
        var hosts = 0
        var codings: [String] = []
        var lengths: [String] = []
        for field in headers {
            if HTTPHeaders.sameName(field.name, "Host") {
                hosts += 1
            } else if HTTPHeaders.sameName(field.name, "Content-Length") {
                lengths.append(field.value)
            } else if HTTPHeaders.sameName(field.name, "Transfer-Encoding") {
                codings.append(field.value)
            }
        }
        if !http10 {
            if hosts == 0 { throw HTTPError.badRequest("An HTTP/1.1 request needs a Host header") }
            if hosts > 1 { throw HTTPError.badRequest("More than one Host header") }
        }
        if target.utf8.contains(where: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) {
            throw HTTPError.badRequest("The request target contains white space")
        }
        if !codings.isEmpty {
            if !lengths.isEmpty {
                throw HTTPError.badRequest("A request cannot carry both Content-Length and Transfer-Encoding")
            }
            if http10 {
                throw HTTPError(
                    .lengthRequired,
                    status: .lengthRequired,
                    message: "An HTTP/1.0 request body needs Content-Length; Transfer-Encoding is HTTP/1.1 only"
                )
            }
            return try chunked(codings)
        }
        if lengths.isEmpty { return .noBody }
        // Repeated fields must agree (RFC 9112 section 6.3); libmicrohttpd reads only the first.
        var digits: Substring.UTF8View?
        for value in lengths {
            guard let these = significantDigits(value) else {
                throw HTTPError.badRequest("Content-Length must be a non-negative decimal number")
            }
            if let digits, !digits.elementsEqual(these) {
                throw HTTPError.badRequest("Conflicting Content-Length headers")
            }
            digits = these
        }
        guard let digits, let length = decimal(digits, upTo: maxBodyBytes) else {
            throw HTTPError.payloadTooLarge(limit: maxBodyBytes)
        }
        return .length(length)
    }

    /// The framing a `Transfer-Encoding` gives: `chunked` exactly once, as the one coding.
    private static func chunked(_ fields: [String]) throws(HTTPError) -> Framing {
        var chunkedCount = 0
        var unknown = false
        var elements = 0
        for field in fields {
            for element in field.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
                let parts = element.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false)
                let name = trimmed(parts[0])
                if name.isEmpty {
                    // An empty list element (`a, , b`) is allowed and ignored; an empty name with
                    // parameters is not.
                    if parts.count == 1 && trimmed(element).isEmpty { continue }
                    throw malformedCoding
                }
                guard name.allSatisfy(isTokenByte) else { throw malformedCoding }
                elements += 1
                if String(decoding: name, as: UTF8.self).lowercased() == "chunked" {
                    // chunked takes no parameters
                    if parts.count > 1 { throw malformedCoding }
                    chunkedCount += 1
                } else {
                    unknown = true
                }
            }
        }
        if elements == 0 { throw malformedCoding }
        if unknown {
            throw HTTPError(
                .notImplemented,
                status: .notImplemented,
                message: "Transfer-Encoding other than chunked is not supported"
            )
        }
        if chunkedCount > 1 { throw HTTPError.badRequest("Transfer-Encoding applies chunked more than once") }
        // One chunked coding. libmicrohttpd decodes it only when the first field is that word
        // exactly (no white space, no empty list elements); anything else it would read to the end
        // of the connection.
        guard fields.count == 1, fields[0].lowercased() == "chunked" else { throw malformedCoding }
        return .chunked
    }

    private static let malformedCoding = HTTPError.badRequest("Malformed Transfer-Encoding header")

    /// The digits of a Content-Length value without leading zeros ("0" for zero), or nil when it
    /// is not all digits.
    private static func significantDigits(_ value: String) -> Substring.UTF8View? {
        let utf8 = Substring(value).utf8
        guard !utf8.isEmpty, utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        let start = utf8.firstIndex { $0 != UInt8(ascii: "0") } ?? utf8.index(before: utf8.endIndex)
        return utf8[start...]
    }

    /// The value of decimal `digits` if it is at most `limit`, else nil (without overflowing).
    private static func decimal(_ digits: Substring.UTF8View, upTo limit: Int) -> Int? {
        var value = 0
        for digit in digits {
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int(digit &- UInt8(ascii: "0")))
            if overflow1 || overflow2 || sum > limit { return nil }
            value = sum
        }
        return value
    }

    private static func trimmed(_ bytes: Substring.UTF8View.SubSequence) -> Substring.UTF8View.SubSequence {
        var slice = bytes
        while let first = slice.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") {
            slice = slice.dropFirst()
        }
        while let last = slice.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") {
            slice = slice.dropLast()
        }
        return slice
    }

    /// RFC 9110 tchar.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
