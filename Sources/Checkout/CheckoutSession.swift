public import CardKit
import Foundation
public import VaultCore

/// A hosted checkout as stored: the validated request, where it returns to, its state machine, and once complete
/// the payment data issued for the merchant.
///
/// `sessionId` is the page's capability (a 32-character secret in the page URL); `transactionId` is what the
/// merchant sees (`oauth_token`). They differ so that the merchant's logs never hold a key to the page.
public struct CheckoutSession: Sendable, Equatable, Codable {
    public var sessionId: String
    public var transactionId: String
    public var clientId: String
    public var request: CheckoutRequest
    public var callback: CheckoutCallbackURL
    public var merchantName: String
    public var machine: CheckoutSessionStateMachine
    /// Unix seconds.
    public var createdAt: Int64
    /// Saved cards shown on the page (a paired shopper whose checkout named the current pairing id).
    public var savedCards: [CheckoutSavedCard]
    /// Set when the shopper agreed to pair and the checkout completed.
    public var pairingTransactionId: String?
    /// Set when the checkout completed.
    public var payment: CheckoutIssuedPayment?
    /// The problem shown on the form after a failed authentication.
    public var problem: CheckoutSessionStateMachine.CheckoutFormProblem?
    /// True for an express checkout (no hosted page).
    public var express: Bool
    /// The billing address fields the page asks for, from the registration (nil means `full`).
    public var addressFields: CheckoutAddressFields?

    public init(
        sessionId: String, transactionId: String, clientId: String, request: CheckoutRequest,
        callback: CheckoutCallbackURL, merchantName: String, machine: CheckoutSessionStateMachine, createdAt: Int64,
        savedCards: [CheckoutSavedCard] = [], pairingTransactionId: String? = nil,
        payment: CheckoutIssuedPayment? = nil, problem: CheckoutSessionStateMachine.CheckoutFormProblem? = nil,
        express: Bool = false
    ) {
        self.sessionId = sessionId
        self.transactionId = transactionId
        self.clientId = clientId
        self.request = request
        self.callback = callback
        self.merchantName = merchantName
        self.machine = machine
        self.createdAt = createdAt
        self.savedCards = savedCards
        self.pairingTransactionId = pairingTransactionId
        self.payment = payment
        self.problem = problem
        self.express = express
    }

    /// The card types the page offers: the request's, which the registration already allowed.
    public var allowedCardTypes: Set<MasterpassCardType> { request.allowedCardTypes }
}

/// Payment data issued for a completed checkout, with the postback the merchant sent, if any.
public struct CheckoutIssuedPayment: Sendable, Equatable, Codable {
    /// As served to a client that is not PCI-compliant (the account number is the token).
    public var data: MasterpassPaymentData
    public var cardId: String
    /// Unix seconds: the cryptogram's end, and the end of payment data reads.
    public var expiresAt: Int64
    public var postback: MasterpassPostback?
}

/// The result a merchant reports after charging (`POST /masterpass/postback`).
public struct MasterpassPostback: Sendable, Hashable, Codable {
    public var transactionId: String
    public var checkoutId: String
    public var currency: String
    /// Minor units of `currency`.
    public var amountMinorUnits: Int64
    public var paymentSuccessful: Bool
    public var paymentCode: String?
    /// As sent (ISO 8601).
    public var paymentDate: String?
    public var preCheckoutTransactionId: String?

    public init(
        transactionId: String, checkoutId: String, currency: String, amountMinorUnits: Int64, paymentSuccessful: Bool,
        paymentCode: String?, paymentDate: String?, preCheckoutTransactionId: String?
    ) {
        self.transactionId = transactionId
        self.checkoutId = checkoutId
        self.currency = currency
        self.amountMinorUnits = amountMinorUnits
        self.paymentSuccessful = paymentSuccessful
        self.paymentCode = paymentCode
        self.paymentDate = paymentDate
        self.preCheckoutTransactionId = preCheckoutTransactionId
    }
}

/// One read of payment data (or an attempt that reached a transaction), kept for audit.
public struct PaymentDataAccess: Sendable, Equatable, Codable {
    public enum Outcome: String, Sendable, Codable {
        /// Served with a token as account number.
        case servedToken
        /// Served with the card number (PCI-compliant client).
        case servedAccountNumber
        /// Refused: the cryptogram had expired.
        case refusedExpired
        /// Refused: cartId did not match.
        case refusedCartMismatch
        /// Refused: the shopper had not finished.
        case refusedNotComplete
    }

    public var clientId: String
    public var transactionId: String
    public var checkoutId: String
    /// Unix milliseconds.
    public var at: Int64
    public var outcome: Outcome
    /// `paymentdata` or `expresscheckout`.
    public var operation: String
}

/// The form the hosted page posts, every field as typed. Card number and security code are wrapped.
public struct CheckoutForm: Sendable {
    public var cardNumber: Redacted<String>?
    public var expiry: String?
    public var securityCode: Redacted<String>?
    public var cardHolderName: String?
    /// A saved card chosen instead of typing one.
    public var savedCardId: String?
    public var billing: CheckoutAddressForm
    public var shipping: CheckoutAddressForm
    /// True when the shipping address is the billing address.
    public var shippingSameAsBilling: Bool
    public var email: String?
    public var phone: String?
    public var pairingConsent: Bool

    public init(
        cardNumber: Redacted<String>? = nil, expiry: String? = nil, securityCode: Redacted<String>? = nil,
        cardHolderName: String? = nil, savedCardId: String? = nil, billing: CheckoutAddressForm = .init(),
        shipping: CheckoutAddressForm = .init(), shippingSameAsBilling: Bool = false, email: String? = nil,
        phone: String? = nil, pairingConsent: Bool = false
    ) {
        self.cardNumber = cardNumber
        self.expiry = expiry
        self.securityCode = securityCode
        self.cardHolderName = cardHolderName
        self.savedCardId = savedCardId
        self.billing = billing
        self.shipping = shipping
        self.shippingSameAsBilling = shippingSameAsBilling
        self.email = email
        self.phone = phone
        self.pairingConsent = pairingConsent
    }
}

/// Address fields as posted.
public struct CheckoutAddressForm: Sendable, Equatable {
    public var line1: String?
    public var line2: String?
    public var city: String?
    public var postalCode: String?
    public var subdivision: String?
    public var country: String?

    public init(
        line1: String? = nil, line2: String? = nil, city: String? = nil, postalCode: String? = nil,
        subdivision: String? = nil, country: String? = nil
    ) {
        self.line1 = line1
        self.line2 = line2
        self.city = city
        self.postalCode = postalCode
        self.subdivision = subdivision
        self.country = country
    }

    /// True when no field has text.
    public var isEmpty: Bool {
        [line1, line2, city, postalCode, subdivision, country].allSatisfy { ($0 ?? "").isEmpty }
    }
}

/// What the hosted page does next.
public enum CheckoutStep: Sendable, Equatable {
    /// Show the form (again), with these field errors.
    case form(CheckoutSession, fieldErrors: [CheckoutFieldError])
    /// Send the browser here (the challenge page or the merchant's callback).
    case redirect(String)
    /// The shopper is at the challenge; nothing came back yet.
    case waiting(CheckoutSession)
    /// The checkout expired.
    case expired(CheckoutSession)
}
