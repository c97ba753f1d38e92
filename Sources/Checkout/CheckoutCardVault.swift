public import CardKit
public import VaultCore

/// The card as the shopper typed it on the hosted page. The number and security code are wrapped so that no
/// log, error or dump shows them.
public struct CheckoutCardInput: Sendable {
    public var number: Redacted<String>
    /// `MM/YY` or `MMYY`.
    public var expiry: String
    /// Empty when the checkout does not ask for it (`cvc2Support=false`).
    public var securityCode: Redacted<String>
    public var cardHolderName: String

    public init(number: Redacted<String>, expiry: String, securityCode: Redacted<String>, cardHolderName: String) {
        self.number = number
        self.expiry = expiry
        self.securityCode = securityCode
        self.cardHolderName = cardHolderName
    }
}

/// The browser's signals at submission, for profiling (the hidden device fields of the page plus what the server
/// saw).
public struct CheckoutDeviceSignals: Sendable, Equatable {
    public var ipAddress: String?
    public var userAgent: String?
    public var acceptLanguage: String?
    /// Device fields by name (`screenWidth`, `timeZoneOffset`, ...), as the page posted them.
    public var device: [String: String]

    public init(
        ipAddress: String? = nil, userAgent: String? = nil, acceptLanguage: String? = nil,
        device: [String: String] = [:]
    ) {
        self.ipAddress = ipAddress
        self.userAgent = userAgent
        self.acceptLanguage = acceptLanguage
        self.device = device
    }
}

/// A card the vault accepted: what the checkout may keep and show. Never the number.
public struct VaultedCheckoutCard: Sendable, Hashable, Codable {
    /// The card id of the merchant API.
    public var cardId: String
    public var brand: CardBrand
    /// `497010XXXXXX1119`.
    public var alias: String
    public var expiryMonth: Int
    public var expiryYear: Int
    /// The profiling attempt recorded at tokenization.
    public var profilingReference: String?

    public init(
        cardId: String, brand: CardBrand, alias: String, expiryMonth: Int, expiryYear: Int, profilingReference: String?
    ) {
        self.cardId = cardId
        self.brand = brand
        self.alias = alias
        self.expiryMonth = expiryMonth
        self.expiryYear = expiryYear
        self.profilingReference = profilingReference
    }

    /// The last four digits.
    public var lastFour: String { String(alias.suffix(4)) }
    /// The first six digits (the BIN).
    public var bin: String { String(alias.prefix(6)) }
}

/// Why the vault refused a typed card, by field, so the page can point at it.
public enum CheckoutCardRefusal: Error, Sendable, Equatable {
    case invalidNumber
    case invalidExpiry
    case invalidSecurityCode
    /// Too many attempts from this address; try later.
    case rateLimited
}

/// The card vault as the hosted checkout sees it: tokenization through the merchant API's own code path (a card
/// registration for a checkout shopper, the tokenization step, completion) and, for PCI-compliant clients only,
/// the number itself.
public protocol CheckoutCardVault: Sendable {
    /// Vaults `card` for `clientId`'s shopper `shopperReference` (the checkout's `userId`, or one per checkout).
    /// - Throws: ``CheckoutCardRefusal`` for a card the tokenization step refuses.
    func tokenize(
        clientId: String, shopperReference: String, currency: Currency, card: CheckoutCardInput,
        signals: CheckoutDeviceSignals
    ) async throws -> VaultedCheckoutCard

    /// The full card number of `cardId`, for a client flagged PCI-compliant.
    func accountNumber(clientId: String, cardId: String) async throws -> Redacted<String>

    /// Erases the shopper `shopperReference` of `clientId` and every card vaulted for it (the card numbers are
    /// deleted, the cards deactivated). Called when a checkout without a merchant `userId` ends: its shopper
    /// exists for that checkout alone, and nothing may use its card afterwards. Erasing an unknown or erased
    /// shopper does nothing.
    func eraseShopper(clientId: String, shopperReference: String) async throws
}
