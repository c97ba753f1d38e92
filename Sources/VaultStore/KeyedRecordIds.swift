public import VaultCrypto

/// Record ids for values that are secrets or personal data (idempotency keys, checkout session, transaction and
/// pairing ids, merchants' shopper ids, IP addresses in the risk history): the store names such a record by a keyed
/// hash of the value, never by the value, so that neither the file store's segments nor PostgreSQL's `records`
/// table hold it in clear. Lookups hash the value they are given and find the same record.
///
/// The key is derived from the keyring's fingerprint secret (HKDF, with a label no client id can take), so it is the
/// same on every daemon of one store and survives restarts; it never leaves memory.
public struct KeyedRecordIds: Sendable {
    private let key: SymmetricKey

    /// The HKDF info under which the key is derived from a ``FingerprintKeySource`` (starts with NUL: client ids
    /// are well-formed identifiers and cannot).
    static let label = "\u{0}cardvault keyed record ids v1"
    /// The first character of a keyed id part; the rest is 32 lowercase hexadecimal digits (128 bits).
    static let marker: UInt8 = 0x68  // "h"

    public init(key: SymmetricKey) {
        self.key = key
    }

    /// The ids of the store whose fingerprint keys are `keys`.
    public init(keys: any FingerprintKeySource) throws {
        self.key = try keys.fingerprintKey(forClient: Self.label)
    }

    /// `h` + 32 hex digits: the keyed hash of `value` within `scope` (a client id, or a kind of record for ids
    /// that are not per client).
    public func hashed(_ value: String, scope: String) -> String {
        let mac = HMACSHA256.authenticationCode(for: Array((scope + "\u{1F}" + value).utf8), using: key)
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out: [UInt8] = [Self.marker]
        out.reserveCapacity(33)
        for byte in mac.prefix(16) {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `clientId:` + the keyed hash of `value` for that client: the record id of a client's secret or personal value.
    public func scoped(_ clientId: String, _ value: String) -> String {
        clientId + ":" + hashed(value, scope: clientId)
    }

    /// True when `part` has the shape of ``hashed(_:scope:)``'s result.
    public static func isHashed(_ part: Substring) -> Bool {
        let bytes = part.utf8
        guard bytes.count == 33, bytes.first == marker else { return false }
        return bytes.dropFirst().allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    /// For records written before ids were keyed: the keyed id of a `clientId:value` record id, or nil when `id`
    /// is already keyed (or has no client part). The sweeper moves such records (``RecordLifetime/movingClearIds(_:)``).
    public func rekeyedScopedId(_ id: String) -> String? {
        guard let colon = id.utf8.firstIndex(of: 0x3A) else { return nil }
        let clientId = String(id[..<colon])
        let value = id[id.index(after: colon)...]
        guard !value.isEmpty, !Self.isHashed(value) else { return nil }
        return scoped(clientId, String(value))
    }
}

extension RecordLifetime {
    /// This lifetime, with records whose id `newId` maps to another id moved there first (put where absent, the
    /// old record deleted at its version, in one batch): how records written before ids were keyed get keyed ids.
    /// A record already at its new id is decided by this lifetime's own rule.
    public func movingClearIds(_ newId: @escaping @Sendable (String) -> String?) -> RecordLifetime {
        let own = expire
        var moving = self
        moving.expire = { record, now in
            if let moved = newId(record.id), moved != record.id {
                return [
                    .put(collection: record.collection, id: moved, value: record.value, condition: .absent),
                    .delete(collection: record.collection, id: record.id, condition: .version(record.version)),
                ]
            }
            return try await own?(record, now)
        }
        return moving
    }
}
