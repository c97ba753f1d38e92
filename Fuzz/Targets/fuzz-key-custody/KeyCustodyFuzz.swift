import Foundation
import FuzzSupport

@testable import VaultCrypto

/// What operators and the custody record hand the daemon before it has a key: share lines (``ShareText``, read
/// from `operator unseal` through the admin socket) and the custody record (``KeyCustody``, `custody.json` or
/// PostgreSQL's row). The input is a mode byte (bit 0: a share line, else a custody record) and the text.
/// Properties: a parsed share writes back to a line that parses to the same share, its check value matches its
/// bytes, and unseal progress accepts it; a decoded custody record encodes to one that decodes equal.
@main
enum KeyCustodyFuzz {
    static func main() {
        FuzzDriver.run { input in
            guard let mode = input.first else { return }
            let body = input.dropFirst()
            if mode & 1 != 0 {
                guard let share = try? ShareText.parse(String(decoding: body, as: UTF8.self)) else { return }
                let again = try? ShareText.parse(ShareText.encode(share))
                FuzzCheck.require(again?.index == share.index, "a share line does not round-trip")
                FuzzCheck.require(
                    again.map { $0.bytes.withUnsafeBytes(Array.init) } == share.bytes.withUnsafeBytes(Array.init),
                    "a share's bytes do not round-trip")
                FuzzCheck.require(share.checkValue == KeyCheckValue.hex(of: share.bytes), "check value mismatch")
                var progress = UnsealProgress()
                FuzzCheck.require(
                    (try? progress.add(share, now: Date(timeIntervalSince1970: 0))) != nil,
                    "a parsed share is refused by a fresh unseal")
                return
            }
            guard let custody = try? KeyCustody.decode(body, source: "fuzz") else { return }
            let encoded = try? custody.encoded()
            FuzzCheck.require(
                encoded.flatMap { try? KeyCustody.decode($0, source: "fuzz") } == custody,
                "a custody record does not round-trip")
        }
    }
}
