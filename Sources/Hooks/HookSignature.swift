import Foundation
import VaultCrypto

/// The `CardVault-Signature` header of a hook delivery: `t=<unix seconds>,v1=<hex HMAC-SHA256>` of
/// `"<t>.<query string>"` under the client's hook secret (its UTF-8 bytes are the key). A receiver recomputes
/// the MAC over the raw query string it received, compares in constant time and refuses a `t` too far from
/// its clock, so a forged call fails the MAC and a replayed one fails the age check.
public enum HookSignature {
    /// The header's name.
    public static let headerName = "CardVault-Signature"

    /// Seconds a receiver should accept between `t` and its own clock (the documented default).
    public static let tolerance: Int64 = 300

    /// The header value for a delivery of `query` at `timestamp`.
    public static func header(query: String, timestamp: Int64, secret: String) -> String {
        "t=" + String(timestamp) + ",v1=" + mac(query: query, timestamp: timestamp, secret: secret)
    }

    /// The lower-case hex MAC of `"<timestamp>.<query>"`.
    public static func mac(query: String, timestamp: Int64, secret: String) -> String {
        let key = SymmetricKey(copying: Array(secret.utf8))
        let code = HMACSHA256.authenticationCode(for: Array((String(timestamp) + "." + query).utf8), using: key)
        return hex(code)
    }

    /// What a receiver does: parses `header`, checks the age of `t` against `now` and the MAC over `query`.
    /// - Returns: true only for a well-formed header, fresh within ``tolerance``, whose MAC matches.
    public static func verify(
        header: String, query: String, secret: String, now: Int64, tolerance: Int64 = tolerance
    ) -> Bool {
        var timestamp: Int64?
        var macs: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { return false }
            switch pair[0] {
            case "t": timestamp = Int64(pair[1])
            case "v1": macs.append(pair[1])
            default: continue
            }
        }
        guard let timestamp, !macs.isEmpty, abs(now - timestamp) <= tolerance else { return false }
        let expected = Array(mac(query: query, timestamp: timestamp, secret: secret).utf8)
        return macs.contains { ConstantTime.equals(Array($0.utf8), expected) }
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
