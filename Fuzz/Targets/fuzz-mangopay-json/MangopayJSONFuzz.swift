import FuzzSupport

@testable import MangopayAPI
@testable import Payments

/// The JSON reader of request bodies (``MangopayJSON/parse(_:)``) and the field readers of the binding layer
/// (``MangopayFields``) over whatever it parses. Properties: what parses renders back to text that parses to
/// the same value, and every field reader answers (a value or a recorded type error) for every key.
@main
enum MangopayJSONFuzz {
    static func main() {
        FuzzDriver.run { bytes in
            let body = Array(bytes)
            guard let value = try? MangopayJSON.parse(body) else { return }
            let rendered = value.bytes
            guard let again = try? MangopayJSON.parse(rendered) else {
                FuzzCheck.require(false, "rendered JSON does not parse: \(value.text.prefix(200))")
                return
            }
            FuzzCheck.require(again == value, "rendered JSON parses to another value")
            readFields(body)
        }
    }

    /// Feeds the parsed body through the binding layer's readers, as the handlers do.
    static func readFields(_ body: [UInt8]) {
        guard var fields = try? MangopayFields(body: body) else { return }
        guard case .object(let members) = fields.object else { return }
        for type in [PersonType.natural, .legal] {
            for sca in [false, true] { _ = fields.userFields(type: type, sca: sca) }
        }
        for (key, _) in members.prefix(64) {
            _ = fields.string(key)
            _ = fields.integer(key)
            _ = fields.amount(key)
            _ = fields.boolean(key)
            _ = fields.strings(key)
            _ = fields.address(key)
            _ = fields.money(key)
            _ = fields.object(key) { nested -> Bool? in
                if case .object(let inner) = nested.object {
                    for (name, _) in inner.prefix(16) {
                        _ = nested.string(name)
                        _ = nested.integer(name)
                        _ = nested.amount(name)
                    }
                }
                return true
            }
        }
        _ = fields.payInRequest()
        _ = fields.cardValidationRequest()
        _ = fields.refundRequest()
        _ = try? fields.check()
    }
}
