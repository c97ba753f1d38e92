import CardKit
public import Checkout
import Foundation
public import Payments

/// The checkout's 3-D Secure step over the pay-in service: a card validation (no funds move) of the vaulted card,
/// with the sandbox issuer's rules, the risk engine and the sandbox ACS challenge page. The ACS sends the shopper
/// back to the checkout's return URL; the outcome is then read from the validation.
public struct CheckoutPayInAuthenticator: CheckoutAuthenticator {
    let payIns: PayInService
    let cards: CardService

    public init(payIns: PayInService, cards: CardService) {
        self.payIns = payIns
        self.cards = cards
    }

    public func start(_ request: CheckoutAuthenticationRequest) async throws -> CheckoutAuthenticationStart {
        let card = try await cards.get(clientId: request.clientId, id: request.cardId)
        let signals = request.signals
        var validation = PayInRequest()
        validation.authorId = card.userId
        validation.cardId = card.id
        validation.secureModeReturnURL = request.returnURL
        validation.secureMode = SecureMode.default.rawValue
        validation.ipAddress = signals.ipAddress.flatMap { $0.isEmpty ? nil : $0 } ?? "127.0.0.1"
        validation.browserInfo = BrowserInfo(
            acceptHeader: "text/html", javaEnabled: signals.device["javaEnabled"] == "true",
            javascriptEnabled: signals.device["javascriptEnabled"] == "true",
            language: signals.device["language"] ?? signals.acceptLanguage.map { String($0.prefix(8)) },
            colorDepth: signals.device["colorDepth"].flatMap { Int($0) },
            screenHeight: signals.device["screenHeight"].flatMap { Int($0) },
            screenWidth: signals.device["screenWidth"].flatMap { Int($0) },
            timeZoneOffset: signals.device["timeZoneOffset"], userAgent: signals.userAgent)
        validation.profilingAttemptReference = request.profilingReference
        validation.tag = "checkout"
        // The challenge page shows the cart's amount, the shop and the checkout's language (no funds move here).
        validation.challengeDisplay = ChallengeDisplay(
            amount: Funds(currency: request.amount.currency.code, amount: request.amount.minorUnits),
            merchantName: request.merchantName, locale: request.locale.rawValue)
        let created = try await payIns.create(clientId: request.clientId, request: validation, purpose: .cardValidation)
        if let outcome = Self.outcome(of: created) {
            return .decided(authenticationId: created.id, outcome)
        }
        guard case .awaitingChallenge(let expiresAt) = created.machine.state,
            let url = payIns.challengeURL(for: created)
        else {
            throw CheckoutError(.invalidState, "The card could not be authenticated; try again")
        }
        return .challenge(authenticationId: created.id, redirectURL: url, expiresAt: expiresAt)
    }

    public func outcome(clientId: String, authenticationId: String) async throws -> CheckoutAuthenticationOutcome? {
        Self.outcome(of: try await payIns.get(clientId: clientId, id: authenticationId, purpose: .cardValidation))
    }

    /// The final outcome of a validation, or nil while it waits for the challenge.
    static func outcome(of validation: PayIn) -> CheckoutAuthenticationOutcome? {
        switch validation.machine.state {
        case .succeeded:
            return CheckoutAuthenticationOutcome(
                status: .authenticated, challenged: validation.secureModeNeeded, resultCode: "000000",
                resultMessage: "Success")
        case .failed(let result):
            return CheckoutAuthenticationOutcome(
                status: .notAuthenticated, challenged: validation.secureModeNeeded, resultCode: result.code,
                resultMessage: result.message)
        case .created, .awaitingChallenge:
            return nil
        }
    }
}
