public import Foundation
public import VaultCore

/// An HTTP request as handlers see it: fully received, body included.
///
/// Printing a request shows the method, the path with long digit runs masked, and the request id;
/// never the query string, the body or credential headers.
public struct Request: Sendable, CustomStringConvertible, CustomReflectable {
    public var method: HTTPMethod
    /// The path as sent (percent-encoded), without the query string.
    public var path: String
    /// The raw query string after `?` (empty when absent). Never logged.
    public var rawQuery: String
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// The client's IP address as text (empty for in-process requests).
    public var remoteAddress: String
    /// The id sent back in `X-Request-Id` and carried by every log line about this request.
    public var requestID: String
    /// Values of the route's `:name` segments, percent-decoded.
    public var parameters: [String: String]
    /// The route pattern that matched (`/v2.01/:clientId/cards/:id`), empty when none did.
    public var route: String
    /// The server's logger; ``logger`` adds this request's id to it.
    public var baseLogger: Logger

    /// A logger carrying this request's id (built when asked for, so requests that log nothing
    /// pay nothing).
    public var logger: Logger { baseLogger.with(["requestId": .string(requestID)]) }

    /// Creates a request; `target` is the path with an optional `?query`.
    public init(
        method: HTTPMethod,
        target: String,
        headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [],
        remoteAddress: String = "",
        requestID: String = "test",
        logger: Logger = .disabled
    ) {
        let parts = Self.split(target)
        self.init(
            method: method, path: parts.path, rawQuery: parts.rawQuery, headers: headers, body: body,
            remoteAddress: remoteAddress, requestID: requestID, logger: logger)
    }

    /// The path and the query of a request target (`/a/b?c=d`: `/a/b` and `c=d`).
    struct TargetParts {
        var path: String
        var rawQuery: String
    }

    static func split(_ target: String) -> TargetParts {
        guard let question = target.utf8.firstIndex(of: UInt8(ascii: "?")) else {
            return TargetParts(path: target, rawQuery: "")
        }
        return TargetParts(
            path: String(target[..<question]), rawQuery: String(target[target.utf8.index(after: question)...]))
    }

    /// Creates a request from a target already split (the server splits it once, to route it).
    init(
        method: HTTPMethod, path: String, rawQuery: String, headers: HTTPHeaders, body: [UInt8],
        remoteAddress: String, requestID: String, logger: Logger
    ) {
        self.method = method
        self.path = path
        self.rawQuery = rawQuery
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
        self.requestID = requestID
        self.parameters = [:]
        self.route = ""
        self.baseLogger = logger
    }

    /// The query string's fields.
    ///
    /// - Throws: ``HTTPError`` 400 when it is malformed.
    public func query() throws(HTTPError) -> FormFields {
        try URLEncodedForm.parse(rawQuery)
    }

    /// The body parsed as `application/x-www-form-urlencoded`, whatever the content type says.
    ///
    /// - Throws: ``HTTPError`` 400 when it is malformed.
    public func formFields() throws(HTTPError) -> FormFields {
        try URLEncodedForm.parse(body)
    }

    /// Overwrites the body with zeros where it lies, for the handler of a route whose body holds card
    /// data, once it has taken the fields it needs (see ``formFields()``): the received bytes then do
    /// not outlive their parse in freed heap memory.
    ///
    /// On purpose this writes under the value semantics of `[UInt8]`: every copy of this request (the
    /// server's, the handler's) shares one buffer, and that buffer is what must not keep the card
    /// number; copying it first, as a mutation would, wipes the copy only. So nothing may read the
    /// body after this call, and the body must not be stored anywhere. The server reserved the buffer
    /// at the announced Content-Length, so a sized body was never moved (a chunked one may have left
    /// earlier, smaller buffers behind when it grew).
    public func wipeBody() {
        body.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress, buffer.count > 0 else { return }
            explicit_bzero(UnsafeMutableRawPointer(mutating: base), buffer.count)
        }
    }

    /// The body decoded as JSON, whatever the content type says.
    ///
    /// - Throws: ``HTTPError`` 400 naming the problem (without echoing any value).
    public func decodeJSON<T: Decodable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws(HTTPError) -> T {
        guard !body.isEmpty else { throw HTTPError.badRequest("The request body is empty; JSON was expected") }
        do {
            return try decoder.decode(type, from: Data(body))
        } catch let error as DecodingError {
            throw HTTPError.badRequest(Self.describe(error))
        } catch {
            throw HTTPError.badRequest("The request body is not valid JSON")
        }
    }

    /// Names the field a decoding error is about, never its value.
    static func describe(_ error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey]) -> String {
            codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let parent = path(context.codingPath)
            return "Missing field " + (parent.isEmpty ? key.stringValue : parent + "." + key.stringValue)
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "Field " + path(context.codingPath) + " has the wrong type"
        case .dataCorrupted(let context):
            let field = path(context.codingPath)
            return field.isEmpty ? "The request body is not valid JSON" : "Field " + field + " is invalid"
        @unknown default:
            return "The request body is not valid JSON"
        }
    }

    public var description: String {
        method.rawValue + " " + LogScrubber.maskDigitRuns(path) + " (" + requestID + ")"
    }

    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "method": method.rawValue, "path": LogScrubber.maskDigitRuns(path), "requestID": requestID,
                "headers": headers, "bodyBytes": body.count,
            ],
            displayStyle: .struct
        )
    }
}
