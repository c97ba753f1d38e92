import Foundation
public import Risk

/// An amount with its currency, as the wire carries it (`{"Currency":"EUR","Amount":1000}`), in integer minor units.
public struct Funds: Sendable, Equatable, Codable {
    public var currency: String
    public var amount: Int64

    /// Largest magnitude of an amount the API takes, in minor units (one billion in a two-decimal currency).
    /// Every sum and difference of a few such amounts fits in 64 bits; sums that grow without bound (wallet
    /// balances, refunded totals) are still computed with overflow checks.
    public static let maximumAmount: Int64 = 100_000_000_000

    public init(currency: String, amount: Int64) {
        self.currency = currency
        self.amount = amount
    }
}

/// What the shopper's browser told the merchant, sent along for 3-D Secure (`BrowserInfo`).
public struct BrowserInfo: Sendable, Equatable, Codable {
    public var acceptHeader: String?
    public var javaEnabled: Bool?
    public var javascriptEnabled: Bool?
    public var language: String?
    public var colorDepth: Int?
    public var screenHeight: Int?
    public var screenWidth: Int?
    /// Minutes; the wire sends `60` or `"+60"`.
    public var timeZoneOffset: String?
    public var userAgent: String?
    /// The fields that arrived in the other JSON type Mangopay takes for them (a size or an offset as a number or
    /// as text, a flag as `1`/`0`), so that answers echo the type each client sent and decodes (docs/wire-binding.md).
    public var alternateTypes: AlternateTypes?

    /// One bit per loose field, set when the client sent it in its alternate JSON type.
    public struct AlternateTypes: OptionSet, Sendable, Equatable, Codable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// `JavaEnabled` as `1`/`0` rather than a boolean.
        public static let javaEnabledAsNumber = Self(rawValue: 1 << 0)
        /// `JavascriptEnabled` as `1`/`0` rather than a boolean.
        public static let javascriptEnabledAsNumber = Self(rawValue: 1 << 1)
        /// `ColorDepth` as text rather than a number.
        public static let colorDepthAsText = Self(rawValue: 1 << 2)
        /// `ScreenHeight` as text rather than a number.
        public static let screenHeightAsText = Self(rawValue: 1 << 3)
        /// `ScreenWidth` as text rather than a number.
        public static let screenWidthAsText = Self(rawValue: 1 << 4)
        /// `TimeZoneOffset` as a number (the Checkout SDKs) rather than text (the Python SDK's `"+60"`).
        public static let timeZoneOffsetAsNumber = Self(rawValue: 1 << 5)
    }

    public init(
        acceptHeader: String? = nil, javaEnabled: Bool? = nil, javascriptEnabled: Bool? = nil, language: String? = nil,
        colorDepth: Int? = nil, screenHeight: Int? = nil, screenWidth: Int? = nil, timeZoneOffset: String? = nil,
        userAgent: String? = nil
    ) {
        self.acceptHeader = acceptHeader
        self.javaEnabled = javaEnabled
        self.javascriptEnabled = javascriptEnabled
        self.language = language
        self.colorDepth = colorDepth
        self.screenHeight = screenHeight
        self.screenWidth = screenWidth
        self.timeZoneOffset = timeZoneOffset
        self.userAgent = userAgent
    }
}

/// A name and an address (`Billing`, `Shipping`).
public struct PartyAddress: Sendable, Equatable, Codable {
    public var firstName: String?
    public var lastName: String?
    public var address: Address?

    public init(firstName: String? = nil, lastName: String? = nil, address: Address? = nil) {
        self.firstName = firstName
        self.lastName = lastName
        self.address = address
    }
}

/// What a merchant sends to create a direct card pay-in, or a card validation (no funds).
public struct PayInRequest: Sendable, Equatable {
    public var authorId: String?
    public var creditedUserId: String?
    public var creditedWalletId: String?
    public var debitedFunds: Funds?
    public var fees: Funds?
    public var cardId: String?
    public var secureModeReturnURL: String?
    public var secureMode: String?
    public var ipAddress: String?
    public var browserInfo: BrowserInfo?
    public var statementDescriptor: String?
    public var tag: String?
    public var billing: PartyAddress?
    public var shipping: PartyAddress?
    public var culture: String?
    public var profilingAttemptReference: String?
    public var preferredCardNetwork: String?
    public var paymentCategory: String?
    /// What the ACS page shows when the caller knows better than the request (see ``ChallengeDisplay``).
    public var challengeDisplay: ChallengeDisplay?

    public init() {}
}

/// What the card issuer said about the card, as far as the sandbox knows (`CardInfo`).
public struct CardInfo: Sendable, Equatable, Codable {
    public var bin: String
    public var issuingBank: String?
    public var issuerCountryCode: String?
    public var type: String?
    public var brand: String
    public var subType: String?
}

/// A direct card pay-in or a card validation, with its 3-D Secure state.
public struct PayIn: Sendable, Equatable, Codable {
    public var id: String
    public var clientId: String
    public var machine: PayInStateMachine
    public var authorId: String
    public var creditedUserId: String?
    public var creditedWalletId: String?
    public var debitedFunds: Funds
    public var fees: Funds
    public var cardId: String
    public var cardInfo: CardInfo
    public var secureMode: SecureMode
    public var secureModeReturnURL: String
    /// Set while a challenge is pending or was presented.
    public var secureModeNeeded: Bool
    /// The single-use secret of the sandbox ACS link; cleared once the challenge is answered.
    public var challengeSecret: String?
    public var ipAddress: String?
    public var browserInfo: BrowserInfo?
    public var statementDescriptor: String?
    public var tag: String?
    public var billing: PartyAddress?
    public var shipping: PartyAddress?
    public var culture: String?
    public var profilingAttemptReference: String?
    public var preferredCardNetwork: String?
    public var paymentCategory: String?
    public var risk: RiskAssessment
    /// The card's fingerprint and the shopper's device id, for the risk history.
    public var fingerprint: String
    public var deviceId: String?
    public var creationDate: Int64
    public var executionDate: Int64?
    /// Refunded so far (the sum of the refunds' `DebitedFunds`), in minor units of the debited currency.
    public var refunded: Int64
    /// Fees given back so far (the sum of the refunds' negative `Fees`, as a positive number); nil before any.
    public var refundedFees: Int64?
    /// What kind of pay-in beyond a direct card pay-in (``PayInKind``'s raw value); nil for a direct card pay-in or
    /// a validation.
    public var kind: String? = nil
    /// The recurring registration a recurring pay-in (CIT or MIT) belongs to.
    public var recurringRegistrationId: String? = nil
    /// The wallet token's network and transaction id (Apple Pay, Google Pay); never the token itself.
    public var walletNetwork: String? = nil
    public var walletTransactionId: String? = nil

    /// The kind of pay-in, nil for a direct card pay-in or a validation.
    public var payInKind: PayInKind? { kind.flatMap(PayInKind.init(rawValue:)) }
    /// For a preauthorization or a deposit: the hold on the card (what is left, captures, expiry).
    public var hold: PreauthorizationStateMachine? = nil
    /// For a capture: the preauthorization (`PaymentType` PREAUTHORIZED) or deposit it captured.
    public var capturedFrom: CaptureSource? = nil
    /// What the ACS page shows (amount, merchant, language) when the flow that started it said more.
    public var challengeDisplay: ChallengeDisplay? = nil
    /// For a PayPal pay-in (``PayInKind/isPayPal``): its order, URLs and buyer.
    public var payPal: PayPalOrder? = nil

    /// `DebitedFunds - Fees`.
    public var creditedFunds: Funds {
        Funds(currency: debitedFunds.currency, amount: debitedFunds.amount - fees.amount)
    }

    /// `SUCCEEDED`, `FAILED` or `CREATED`.
    public var status: String { machine.state.status }

    /// The result so far (nil while undecided).
    public var result: ResultCode? { machine.state.result }
}

/// A refund of (part of) a succeeded pay-in.
public struct Refund: Sendable, Equatable, Codable {
    public var id: String
    public var clientId: String
    public var payInId: String
    public var authorId: String
    public var creditedUserId: String?
    public var debitedWalletId: String
    /// Taken from the wallet.
    public var debitedFunds: Funds
    /// Negative: fees given back to the shopper (from what the pay-in's fees took); positive: fees the
    /// platform keeps out of the refunded amount.
    public var fees: Funds
    public var status: String
    public var result: ResultCode
    public var tag: String?
    public var creationDate: Int64
    public var executionDate: Int64?

    /// What goes back to the card: `DebitedFunds - Fees`.
    public var creditedFunds: Funds {
        Funds(currency: debitedFunds.currency, amount: debitedFunds.amount - fees.amount)
    }
}
