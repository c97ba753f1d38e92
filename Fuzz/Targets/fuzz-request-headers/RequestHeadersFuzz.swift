import FuzzSupport

@testable import HTTPServer

/// Header fields and the client's request id: ``HTTPHeaders`` (case-insensitive lookup, set/remove, the
/// redacting description), ``RequestIDs/accept(_:)`` and ``LogScrubber``. The input is header lines
/// (`Name: value`, one per line). Properties: the printed headers never show a credential header's value nor a
/// run of twelve digits; an accepted client id is sane (8–64 safe characters, no digit run);
/// lookups agree with the fields.
@main
enum RequestHeadersFuzz {
    static let ids = RequestIDs()

    static func main() {
        FuzzDriver.run { bytes in
            var headers = HTTPHeaders()
            for line in bytes.split(separator: 0x0A, omittingEmptySubsequences: true).prefix(64) {
                let colon = line.firstIndex(of: UInt8(ascii: ":")) ?? line.endIndex
                let name = String(decoding: line[..<colon], as: UTF8.self)
                let value = colon < line.endIndex ? String(decoding: line[(colon + 1)...], as: UTF8.self) : ""
                headers.add(name, value)
            }
            let printed = headers.description
            FuzzCheck.require(!hasDigitRun(printed), "printed headers show a long digit run")
            for field in headers.fields {
                FuzzCheck.require(headers[field.name] != nil, "a field is not found by its own name")
                // Case-insensitive for ASCII names (HTTP names are tokens; Unicode case mapping is no round trip).
                if field.name.utf8.allSatisfy({ $0 < 0x80 }) {
                    FuzzCheck.require(headers[field.name.uppercased()] != nil, "lookup is not case-insensitive")
                }
                if HTTPHeaders.credentialHeaders.contains(field.name.lowercased()) {
                    FuzzCheck.require(
                        HTTPHeaders.printable(field) == "[REDACTED]", "a credential header prints its value")
                }
            }
            _ = String(describing: headers.customMirror.children.count)
            let incoming = headers[RequestIDs.headerName]
            let accepted = ids.accept(incoming)
            if accepted == incoming { FuzzCheck.require(isSaneID(accepted), "accepted an unsafe request id") }
            if let incoming, accepted != incoming {
                FuzzCheck.require(!RequestIDs.isAcceptable(incoming), "refused a good id")
            }
            var copy = headers
            if let first = headers.fields.first {
                copy.set(first.name, "x")
                FuzzCheck.require(copy.values(first.name) == ["x"], "set left other fields of the name")
                copy.remove(first.name)
                FuzzCheck.require(!copy.contains(first.name), "remove left a field")
            }
            let masked = LogScrubber.maskDigitRuns(String(decoding: bytes, as: UTF8.self))
            FuzzCheck.require(!hasDigitRun(masked), "masking left a long digit run")
        }
    }

    /// Twelve or more digits, possibly split by spaces and dashes (the way card numbers are written).
    static func hasDigitRun(_ text: String) -> Bool {
        var digits = 0
        for byte in text.utf8 {
            if byte >= 0x30 && byte <= 0x39 {
                digits += 1
                if digits >= LogScrubber.minimumRun { return true }
            } else if byte != 0x20 && byte != 0x2D {
                digits = 0
            }
        }
        return false
    }

    static func isSaneID(_ id: String) -> Bool {
        guard (8...64).contains(id.utf8.count), !hasDigitRun(id) else { return false }
        return id.utf8.allSatisfy { byte in
            let letter = byte | 0x20
            return (byte >= 0x30 && byte <= 0x39) || (letter >= 0x61 && letter <= 0x7A) || byte == 0x2D || byte == 0x2E
                || byte == 0x5F
        }
    }
}
