import CardKit
import Foundation
import Payments

/// The texts of the sandbox ACS page in English and French. The language is the one the flow that reached the page
/// chose: the hosted checkout's or web pay-in's locale, else the pay-in's `Culture`, else English.
struct SandboxACSStrings: Sendable {
    enum Language: String, Sendable { case en, fr }

    let language: Language

    init(_ language: Language) { self.language = language }

    /// The language of `view`: its display locale, else its `Culture`; French for `fr…`, English otherwise.
    init(for view: ChallengeView) {
        let chosen = view.display?.locale ?? view.culture ?? "en"
        language = chosen.lowercased().hasPrefix("fr") ? .fr : .en
    }

    /// The `lang` attribute.
    var languageTag: String { language.rawValue }

    private func pick(_ en: String, _ fr: String) -> String { language == .fr ? fr : en }

    var documentTitle: String { pick("3-D Secure authentication", "Authentification 3-D Secure") }
    var confirmTitle: String { pick("Confirm your payment", "Confirmez votre paiement") }
    var confirmCardTitle: String { pick("Confirm your card", "Confirmez votre carte") }
    var completeTitle: String { pick("Authentication complete", "Authentification terminée") }
    var amountLabel: String { pick("Amount", "Montant") }
    var cardLabel: String { pick("Card", "Carte") }
    var merchantLabel: String { pick("Merchant", "Marchand") }
    var referenceLabel: String { pick("Reference", "Référence") }
    var noAmount: String {
        pick("No amount is charged (card check)", "Aucun montant débité (vérification de la carte)")
    }
    var codeLabel: String { pick("One-time code", "Code à usage unique") }
    var submit: String { pick("Confirm", "Confirmer") }
    var cancel: String { pick("Cancel", "Annuler") }
    var returnToMerchant: String { pick("Return to the merchant", "Revenir chez le marchand") }
    var genericMerchant: String { pick("CardVault sandbox merchant", "Marchand de test CardVault") }
    var sandboxNotice: String {
        pick("Sandbox bank: no real card is charged.", "Banque de test : aucune vraie carte n'est débitée.")
    }

    func codeHint(_ code: String) -> String {
        pick(
            "Sandbox: the code is \(code); any other code fails the authentication.",
            "Test : le code est \(code) ; tout autre code fait échouer l'authentification.")
    }

    func intro(merchant: String) -> String {
        pick(
            "\(merchant) asks your bank to confirm this payment. Enter the code your bank sent you.",
            "\(merchant) demande à votre banque de confirmer ce paiement. Saisissez le code envoyé par votre banque.")
    }

    /// The sentence for a finished authentication, from the transaction's status.
    func outcome(status: String, cardValidation: Bool) -> String {
        switch (status, cardValidation) {
        case ("SUCCEEDED", false):
            return pick(
                "Your payment was confirmed. You can return to the merchant.",
                "Votre paiement a été confirmé. Vous pouvez revenir chez le marchand.")
        case ("SUCCEEDED", true):
            return pick(
                "Your card was confirmed. You can return to the merchant.",
                "Votre carte a été confirmée. Vous pouvez revenir chez le marchand.")
        case ("FAILED", _):
            return pick(
                "The authentication did not succeed, so nothing was charged. Return to the merchant to try again.",
                "L'authentification n'a pas abouti : rien n'a été débité. Revenez chez le marchand pour réessayer.")
        default:
            return pick(
                "The authentication is being processed. Return to the merchant to see the result.",
                "L'authentification est en cours de traitement. Revenez chez le marchand pour voir le résultat.")
        }
    }

    var linkInvalidTitle: String { pick("Authentication link not valid", "Lien d'authentification non valide") }
    var linkInvalidText: String {
        pick(
            "This authentication link is not valid. Return to the merchant and try again.",
            "Ce lien d'authentification n'est pas valide. Revenez chez le marchand et réessayez.")
    }

    /// `amount` written the language's way: `120.00 EUR`, `120,00 EUR`.
    func amount(_ funds: Funds) -> String {
        guard let currency = Currency(code: funds.currency) else { return String(funds.amount) + " " + funds.currency }
        let decimal = Money(minorUnits: funds.amount, currency: currency).decimalString
        return (language == .fr ? decimal.replacingOccurrences(of: ".", with: ",") : decimal) + "\u{00A0}"
            + currency.code
    }
}
