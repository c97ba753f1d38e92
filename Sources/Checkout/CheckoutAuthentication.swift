public import CardKit
public import Foundation

/// The EMV 3-D Secure `transStatus` of a finished authentication.
public enum CheckoutAuthenticationStatus: String, Sendable, Hashable, Codable {
    /// Authenticated.
    case authenticated = "Y"
    /// Attempts processing: not authenticated, proof of attempt given.
    case attempted = "A"
    /// Not authenticated; the transaction is denied.
    case notAuthenticated = "N"
    /// Authentication could not be performed.
    case unavailable = "U"
    /// The issuer rejects the transaction.
    case rejected = "R"

    /// True for Y and A, the outcomes a checkout may complete with.
    public var allowsCompletion: Bool { self == .authenticated || self == .attempted }
}

/// The result of a 3-D Secure authentication of a checkout card, as the pay-in/validation flow reports it.
public struct CheckoutAuthenticationOutcome: Sendable, Hashable, Codable {
    public var status: CheckoutAuthenticationStatus
    /// True when the shopper went through a challenge (false: frictionless).
    public var challenged: Bool
    /// The flow's result code (`000000`, `101301`, ...).
    public var resultCode: String
    public var resultMessage: String

    public init(status: CheckoutAuthenticationStatus, challenged: Bool, resultCode: String, resultMessage: String) {
        self.status = status
        self.challenged = challenged
        self.resultCode = resultCode
        self.resultMessage = resultMessage
    }
}

/// What the 3-D Secure step needs to know about a checkout card.
public struct CheckoutAuthenticationRequest: Sendable, Equatable {
    public var clientId: String
    /// The vaulted card (a card id of the merchant API).
    public var cardId: String
    public var amount: Money
    /// Where the challenge page sends the shopper back to when they finish or cancel.
    public var returnURL: String
    /// The profiling attempt recorded when the card was tokenized, for the risk engine.
    public var profilingReference: String?
    /// The browser's signals at submission (address, user agent, screen, time zone), for the 3DS browser data.
    public var signals: CheckoutDeviceSignals
    /// The shop name the checkout page showed, for the challenge page.
    public var merchantName: String?
    /// The checkout's language, for the challenge page.
    public var locale: CheckoutLocale

    public init(
        clientId: String, cardId: String, amount: Money, returnURL: String, profilingReference: String?,
        signals: CheckoutDeviceSignals, merchantName: String? = nil, locale: CheckoutLocale = .enUS
    ) {
        self.merchantName = merchantName
        self.locale = locale
        self.clientId = clientId
        self.cardId = cardId
        self.amount = amount
        self.returnURL = returnURL
        self.profilingReference = profilingReference
        self.signals = signals
    }
}

/// How a started authentication continues.
public enum CheckoutAuthenticationStart: Sendable, Equatable {
    /// Decided without the shopper (frictionless, or declined at once).
    case decided(authenticationId: String, CheckoutAuthenticationOutcome)
    /// The shopper must pass a challenge at `redirectURL` before `expiresAt`.
    case challenge(authenticationId: String, redirectURL: String, expiresAt: Date)
}

/// The 3-D Secure step of the hosted checkout: the pay-in service's card-validation flow (its risk engine,
/// sandbox issuer and ACS challenge page), seen through the two calls the checkout needs.
public protocol CheckoutAuthenticator: Sendable {
    /// Starts authenticating `request.cardId` for `request.amount`.
    func start(_ request: CheckoutAuthenticationRequest) async throws -> CheckoutAuthenticationStart
    /// The outcome of authentication `authenticationId` of `clientId`, or nil while the shopper has not finished.
    func outcome(clientId: String, authenticationId: String) async throws -> CheckoutAuthenticationOutcome?
}
