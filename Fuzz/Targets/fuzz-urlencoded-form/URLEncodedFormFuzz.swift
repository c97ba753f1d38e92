import FuzzSupport

@testable import HTTPServer

/// `application/x-www-form-urlencoded` bodies and query strings (``URLEncodedForm``), and the percent-decoding
/// of path segments. Properties: a parse never makes more pairs than there are `&`-separated parts, and a
/// form without `%` or `+` decodes every pair to its bytes as written.
@main
enum URLEncodedFormFuzz {
    static func main() {
        FuzzDriver.run { bytes in
            let parts = bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true)
            if let fields = try? URLEncodedForm.parse(bytes) {
                FuzzCheck.require(fields.pairs.count <= parts.count, "more pairs than parts")
                if !bytes.contains(UInt8(ascii: "%")), !bytes.contains(UInt8(ascii: "+")) {
                    let names = parts.map { part in
                        String(decoding: part.prefix { $0 != UInt8(ascii: "=") }, as: UTF8.self)
                    }
                    FuzzCheck.require(fields.pairs.map(\.name) == names, "names are not the text before '='")
                }
                if let first = fields.pairs.first {
                    FuzzCheck.require(fields[first.name] == first.value, "lookup does not find the first pair")
                }
                _ = fields.description
            }
            if let text = String(validating: bytes, as: UTF8.self) {
                _ = try? URLEncodedForm.percentDecode(Substring(text))
                _ = try? URLEncodedForm.parse(text)
            }
        }
    }
}
