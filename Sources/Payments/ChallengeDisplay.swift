public import VaultStore

/// What the sandbox ACS page shows the shopper about the payment being authenticated, when the flow that started
/// the authentication knows more than the transaction itself: the hosted checkout's card validation moves no funds
/// but authenticates the cart's amount for the merchant's shop name, in the checkout's language; the web card
/// pay-in names its merchant. Display only: nothing here is charged or checked.
public struct ChallengeDisplay: Sendable, Equatable, Codable {
    /// The amount the shopper is asked to confirm (nil: the transaction's `DebitedFunds`).
    public var amount: Funds?
    /// The merchant's name as the shopper knows it (nil: the `StatementDescriptor`, else a generic name).
    public var merchantName: String?
    /// `en_US`, `fr_FR`, `fr`, ... (nil: the transaction's `Culture`, else English).
    public var locale: String?

    public init(amount: Funds? = nil, merchantName: String? = nil, locale: String? = nil) {
        self.amount = amount
        self.merchantName = merchantName.map { String($0.prefix(100)) }
        self.locale = locale.map { String($0.prefix(16)) }
    }
}

extension ChallengeDisplay: BinarySchema {
    public static let binaryFields: [BinaryField<Self>] = [
        .record(1, \.amount), .string(2, \.merchantName), .string(3, \.locale),
    ]
    public static var binaryBlank: Self { ChallengeDisplay() }
}
