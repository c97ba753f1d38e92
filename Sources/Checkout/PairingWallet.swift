public import CardKit

/// A card a paired shopper saved with a merchant: enough to show it masked and to pay with it again.
public struct CheckoutSavedCard: Sendable, Hashable, Codable {
    public var card: VaultedCheckoutCard
    public var cardHolderName: String
    public var billingAddress: MasterpassAddress?
    public var isDefault: Bool

    public var cardId: String { card.cardId }

    public init(card: VaultedCheckoutCard, cardHolderName: String, billingAddress: MasterpassAddress?, isDefault: Bool)
    {
        self.card = card
        self.cardHolderName = cardHolderName
        self.billingAddress = billingAddress
        self.isDefault = isDefault
    }
}

/// A shipping address a paired shopper saved, with its id and recipient.
public struct CheckoutSavedAddress: Sendable, Hashable, Codable {
    public var addressId: String
    public var address: MasterpassAddress
    public var recipient: MasterpassPersonalInfo?
    public var isDefault: Bool
}

/// What a shopper (a merchant's `userId`) paired with one merchant: cards, shipping addresses, contact, and the
/// current pairing id (nil until the merchant exchanged a pairing transaction for one). One per client and
/// user; the pairing id rotates on every precheckout and express checkout.
public struct PairingWallet: Sendable, Equatable, Codable {
    public var clientId: String
    public var userId: String
    public var walletId: String
    public var cards: [CheckoutSavedCard]
    public var shippingAddresses: [CheckoutSavedAddress]
    public var personalInfo: MasterpassPersonalInfo?
    public var pairingId: String?
    /// The last precheckout's transaction id; an express checkout naming another one is refused.
    public var preCheckoutTransactionId: String?

    /// Adds the card and addresses of a completed checkout; the newest card and address become the defaults.
    mutating func add(_ submission: CheckoutSubmission, addressId: () -> String) {
        let saved = CheckoutSavedCard(
            card: submission.card, cardHolderName: submission.cardHolderName,
            billingAddress: submission.billingAddress, isDefault: true)
        cards.removeAll { $0.cardId == submission.card.cardId }
        for index in cards.indices { cards[index].isDefault = false }
        cards.append(saved)
        if let address = submission.shippingAddress {
            if let index = shippingAddresses.firstIndex(where: { $0.address == address }) {
                for other in shippingAddresses.indices { shippingAddresses[other].isDefault = other == index }
            } else {
                for index in shippingAddresses.indices { shippingAddresses[index].isDefault = false }
                shippingAddresses.append(
                    CheckoutSavedAddress(
                        addressId: addressId(), address: address, recipient: submission.personalInfo, isDefault: true))
            }
        }
        if let info = submission.personalInfo { personalInfo = info }
    }
}

/// A pairing transaction: the shopper agreed to pair during checkout; the merchant exchanges its id (the
/// callback's `pairing_verifier`) and the `userId` for a pairing id, once. The checkout's card joins the user's
/// wallet at that exchange, not before.
public struct PairingTransaction: Sendable, Equatable, Codable {
    public var pairingTransactionId: String
    public var clientId: String
    public var userId: String
    public var transactionId: String
    /// Unix seconds.
    public var expiresAt: Int64
    public var redeemed: Bool
    /// The card, addresses and contact of the checkout, waiting for the merchant to redeem the pairing; nil
    /// once redeemed (they are in the wallet then).
    public var submission: CheckoutSubmission?
}

/// A pairing id, pointing at its wallet.
struct PairingPointer: Sendable, Equatable, Codable {
    var clientId: String
    var userId: String
}

/// `PreCheckoutCard` (reference §1.7): masked, with `lastFour` and two-digit expiry strings.
public struct MasterpassPreCheckoutCard: Sendable, Hashable, Codable {
    public var brandId: String
    public var brandName: String
    public var cardHolderName: String
    public var cardId: String
    public var isDefault: Bool
    public var expiryMonth: String
    public var expiryYear: String
    public var lastFour: String

    enum CodingKeys: String, CodingKey {
        case brandId, brandName, cardHolderName, cardId, expiryMonth, expiryYear, lastFour
        case isDefault = "default"
    }
}

/// `PreCheckoutShippingAddress`.
public struct MasterpassPreCheckoutShippingAddress: Sendable, Hashable, Codable {
    public var addressId: String
    public var line1: String
    public var line2: String?
    public var line3: String?
    public var line4: String?
    public var line5: String?
    public var city: String
    public var subdivision: String?
    public var postalCode: String
    public var country: String
    public var recipientInfo: MasterpassPersonalInfo?
    public var isDefault: Bool
}

/// `PreCheckoutData`: what a paired wallet holds, masked, with a new pairing id.
public struct MasterpassPreCheckoutData: Sendable, Hashable, Codable {
    public var cards: [MasterpassPreCheckoutCard]
    public var shippingAddresses: [MasterpassPreCheckoutShippingAddress]
    public var contactInfo: MasterpassPersonalInfo?
    public var preCheckoutTransactionId: String
    public var consumerWalletId: String
    public var pairingId: String
    public var walletName: String
}

extension MasterpassCardType {
    /// The name Masterpass gives the network (`MasterCard`, `American Express`).
    public var brandName: String {
        switch self {
        case .master: "MasterCard"
        case .visa: "Visa"
        case .amex: "American Express"
        case .discover: "Discover"
        case .diners: "Diners Club"
        case .maestro: "Maestro"
        case .jcb: "JCB"
        }
    }
}
