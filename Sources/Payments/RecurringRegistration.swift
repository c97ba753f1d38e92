/// The kinds of pay-in besides the direct card pay-in, as stored in ``PayIn/kind``.
public enum PayInKind: String, Sendable, Codable, CaseIterable {
    /// A recurring pay-in started by the shopper, with 3-D Secure (`/payins/recurring/card/direct` with browser data).
    case recurringCustomerInitiated = "RECURRING_CIT"
    /// A recurring pay-in started by the merchant without the shopper (stored credential, no CVC, no challenge).
    case recurringMerchantInitiated = "RECURRING_MIT"
    /// An Apple Pay direct pay-in (`/payins/applepay/direct`).
    case applePay = "APPLEPAY"
    /// A Google Pay direct pay-in (`/payins/payment-methods/googlepay`, and the older `/payins/googlepay/direct`).
    case googlePay = "GOOGLE_PAY"
    /// A PayPal pay-in (`/payins/payment-methods/paypal`, and the older `/payins/paypal/web`).
    case payPal = "PAYPAL"
    /// A recurring PayPal pay-in the buyer approves (a `PAYPAL` registration's first, until one succeeded).
    case payPalRecurringCustomerInitiated = "PAYPAL_RECURRING_CIT"
    /// A recurring PayPal pay-in without the buyer, once a CIT succeeded.
    case payPalRecurringMerchantInitiated = "PAYPAL_RECURRING_MIT"

    /// The wire's `PaymentType`.
    public var paymentType: String {
        switch self {
        case .recurringCustomerInitiated, .recurringMerchantInitiated: "CARD"
        case .applePay: "APPLEPAY"
        case .googlePay: "GOOGLE_PAY"
        case .payPal, .payPalRecurringCustomerInitiated, .payPalRecurringMerchantInitiated: "PAYPAL"
        }
    }

    /// Whether the buyer pays with PayPal (and approves on the approval page, but for an MIT).
    public var isPayPal: Bool { paymentType == "PAYPAL" }

    /// A recurring pay-in made without the shopper.
    public var isMerchantInitiated: Bool {
        self == .recurringMerchantInitiated || self == .payPalRecurringMerchantInitiated
    }

    /// Whether a card of the vault pays (recurring pay-ins), rather than a wallet token.
    public var usesVaultedCard: Bool {
        self == .recurringCustomerInitiated || self == .recurringMerchantInitiated
    }
}

/// What a merchant sends to create a recurring pay-in registration.
public struct RecurringRegistrationRequest: Sendable, Equatable {
    public var authorId: String?
    public var cardId: String?
    public var creditedUserId: String?
    public var creditedWalletId: String?
    public var firstTransactionDebitedFunds: Funds?
    public var firstTransactionFees: Funds?
    public var nextTransactionDebitedFunds: Funds?
    public var nextTransactionFees: Funds?
    public var billing: PartyAddress?
    public var shipping: PartyAddress?
    public var endDate: Int64?
    public var frequency: String?
    public var fixedNextAmount: Bool?
    public var fractionedPayment: Bool?
    public var migration: Bool?
    public var freeCycles: Int64?
    public var paymentType: String?
    public var tag: String?

    public init() {}
}

/// A recurring card pay-in registration: the card, wallet and amounts of a series of pay-ins, a first CIT with
/// 3-D Secure and then MITs without the shopper.
public struct RecurringRegistration: Sendable, Equatable, Codable {
    public static let frequencies = [
        "Daily", "Weekly", "TwiceAMonth", "Monthly", "Bimonthly", "Quarterly", "Semiannual", "Annual", "Biannual",
    ]

    public var id: String
    public var clientId: String
    public var machine: RecurringRegistrationStateMachine
    public var authorId: String
    public var cardId: String
    public var creditedUserId: String
    public var creditedWalletId: String
    public var firstTransactionDebitedFunds: Funds
    public var firstTransactionFees: Funds
    public var nextTransactionDebitedFunds: Funds?
    public var nextTransactionFees: Funds?
    public var billing: PartyAddress?
    public var shipping: PartyAddress?
    public var endDate: Int64?
    public var frequency: String?
    public var fixedNextAmount: Bool
    public var fractionedPayment: Bool
    public var migration: Bool
    public var freeCycles: Int64
    public var tag: String?
    public var creationDate: Int64
    /// `PAYPAL` for a PayPal registration (no card); nil for a card's (`CARD_DIRECT`).
    public var paymentType: String? = nil
    /// The result of the latest linked pay-in that failed, shown while the registration needs authentication.
    public var result: ResultCode?
    /// Totals of the linked pay-ins that succeeded, in minor units of the registration's currency.
    public var cumulatedDebitedAmount: Int64
    public var cumulatedFeesAmount: Int64
    public var lastPayInId: String?

    /// The wire's `Status`.
    public var status: String { machine.state.rawValue }

    /// The wire's `RecurringType`.
    public var recurringType: String {
        if fractionedPayment { return "FRACTIONED_PAYMENT" }
        if fixedNextAmount, frequency != nil, nextTransactionDebitedFunds != nil { return "CLASSIC_SUBSCRIPTION" }
        return "CUSTOM"
    }

    /// The funds of a pay-in with none given: the first ones for the first pay-in, the next ones after it (the first
    /// ones again when no next ones were set).
    func defaultFunds() -> (Funds, Funds) {
        if machine.payInsLinked > 0, let next = nextTransactionDebitedFunds {
            return (next, nextTransactionFees ?? Funds(currency: next.currency, amount: 0))
        }
        return (firstTransactionDebitedFunds, firstTransactionFees)
    }
}
