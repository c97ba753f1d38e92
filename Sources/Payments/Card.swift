/// Whether a card has proved usable: `UNKNOWN` until its first payment or validation, then `VALID` or
/// `INVALID` (which never goes back).
public enum CardValidity: String, Sendable, Codable {
    case unknown = "UNKNOWN"
    case valid = "VALID"
    case invalid = "INVALID"
}

/// A registered card as merchants see it: never its number, only the alias (first six, last four) and a
/// fingerprint computed under the client's own key.
public struct Card: Sendable, Equatable, Codable {
    public var id: String
    public var clientId: String
    public var userId: String
    public var currency: String
    /// The registration's `CardType` (`CB_VISA_MASTERCARD`, …).
    public var cardType: String
    /// The scheme (`VISA`, `MASTERCARD`, …).
    public var cardProvider: String
    /// CardKit's brand id (`visa`), for the pay-in and risk code.
    public var brand: String
    /// `497010XXXXXX1119`.
    public var alias: String
    /// `MMYY`.
    public var expirationDate: String
    /// Issuer country (ISO 3166-1 alpha-3) when the configured BIN table knows it, else nil.
    public var country: String?
    public var active: Bool
    public var validity: CardValidity
    /// 32 hex characters: HMAC-SHA256 of the number under the client's fingerprint key, first 16 bytes.
    public var fingerprint: String
    public var cardHolderName: String?
    public var tag: String?
    public var creationDate: Int64
    public var cardRegistrationId: String
}
