import Checkout
import Foundation

/// The texts of the hosted checkout pages, per locale (en_US, fr_FR). Field error sentences come from the domain
/// in English; ``message(_:)`` translates the known ones.
struct CheckoutStrings: Sendable {
    let locale: CheckoutLocale

    init(_ locale: CheckoutLocale) { self.locale = locale }

    /// The text for `key`.
    subscript(_ key: Key) -> String {
        switch locale {
        case .enUS: key.english
        case .frFR: Self.french[key] ?? key.english
        }
    }

    /// The amount written the locale's way (`11.22 USD`, `11,22 USD`).
    func amount(_ decimal: String, currency: String) -> String {
        (locale == .frFR ? decimal.replacingOccurrences(of: ".", with: ",") : decimal) + "\u{00A0}" + currency
    }

    /// `message` written as a sentence: capital first letter, full stop at the end.
    func sentence(_ message: String) -> String {
        guard let first = message.first else { return message }
        var text = first.uppercased() + message.dropFirst()
        if let last = text.last, !".!?".contains(last) { text += "." }
        return text
    }

    /// `message` in this locale when the table knows it, else as given.
    func message(_ message: String) -> String {
        guard locale == .frFR else { return message }
        if let exact = Self.frenchMessages[message] { return exact }
        if message.hasSuffix(" cards are not accepted here") {
            let brand = message.dropLast(" cards are not accepted here".count)
            return "Les cartes " + brand + " ne sont pas acceptées ici"
        }
        if message.hasPrefix("the security code must be "), message.hasSuffix(" digits") {
            let digits = message.dropFirst("the security code must be ".count).dropLast(" digits".count)
            return "le code de sécurité doit comporter \(digits) chiffres"
        }
        return message
    }

    enum Key: String, CaseIterable, Sendable {
        case pageTitle, payTo, total, acceptedCards, savedCards, useNewCard, cardDetails, cardNumber, cardNumberHint
        case expiry, expiryHint, securityCode, securityCodeHint, cardHolderName, billingAddress, shippingAddress
        case sameAsBilling, line1, line2, city, postalCode, region, country, countryHint, contact, email, phone
        case pairingConsent, pay, cancel, errorSummary, authenticationFailed, securedBy, optional
        case errorTitle, errorIntro, expiredTitle, expiredText, waitingTitle, waitingText, continueLabel
        case brandUnknown, brandRefused, cardEnding, expires, notFoundTitle, notFoundText
        case securedShort, securityCodeHintShort, processing, errorText, reference, chooseCountry, somethingWentWrong
        case inlineNumberInvalid, inlineNumberIncomplete, inlineExpiryInvalid, inlineExpiryPast
        case inlineSecurityCodeInvalid, inlineBrandNotAccepted

        var english: String {
            switch self {
            case .pageTitle: "Checkout"
            case .payTo: "Pay"
            case .total: "Total"
            case .acceptedCards: "Accepted cards"
            case .savedCards: "Your saved cards"
            case .useNewCard: "Use a new card"
            case .cardDetails: "Card details"
            case .cardNumber: "Card number"
            case .cardNumberHint: "The 12 to 19 digits on the front of your card"
            case .expiry: "Expiry date"
            case .expiryHint: "MM/YY"
            case .securityCode: "Security code"
            case .securityCodeHint: "3 digits on the back, 4 on the front for American Express"
            case .cardHolderName: "Name on card"
            case .billingAddress: "Billing address"
            case .shippingAddress: "Shipping address"
            case .sameAsBilling: "Same as billing address"
            case .line1: "Street address"
            case .line2: "Apartment, suite (optional)"
            case .city: "City"
            case .postalCode: "Postal code"
            case .region: "State or region (optional)"
            case .country: "Country"
            case .countryHint: "Two-letter code, such as US or FR"
            case .contact: "Contact"
            case .email: "E-mail (optional)"
            case .phone: "Phone (optional)"
            case .pairingConsent: "Remember my card and address with this merchant for faster checkout"
            case .pay: "Pay"
            case .cancel: "Cancel and return to the merchant"
            case .errorSummary: "Please correct the following:"
            case .authenticationFailed: "Your bank could not verify this card. Try again or use another card."
            case .securedBy: "Secured by CardVault. Your card number is never shared with the merchant."
            case .optional: "optional"
            case .errorTitle: "This checkout cannot be opened"
            case .errorIntro: "The merchant sent a request CardVault cannot accept:"
            case .expiredTitle: "This checkout has expired"
            case .expiredText: "Return to the merchant's site and start the checkout again."
            case .waitingTitle: "Verification in progress"
            case .waitingText: "Finish the verification with your bank, then continue."
            case .continueLabel: "Continue"
            case .brandUnknown: "Card type not recognised yet"
            case .brandRefused: "This card type is not accepted here"
            case .cardEnding: "ending in"
            case .expires: "expires"
            case .notFoundTitle: "Checkout not found"
            case .notFoundText: "This checkout link is not valid. Return to the merchant's site and start again."
            case .securedShort: "Secure payment by CardVault"
            case .securityCodeHintShort: "3 or 4 digits on your card"
            case .processing: "Processing your payment…"
            case .errorText:
                "The link to this payment is not valid or was changed. Return to the merchant's site and start the "
                    + "payment again."
            case .reference: "Reference for the merchant:"
            case .chooseCountry: "Choose a country"
            case .somethingWentWrong: "Something went wrong on our side. Please try again in a moment."
            case .inlineNumberInvalid: "The card number is not valid. Check the digits on your card."
            case .inlineNumberIncomplete: "The card number is incomplete."
            case .inlineExpiryInvalid: "Enter the expiry date as MM/YY, such as 04/29."
            case .inlineExpiryPast: "This card has expired. Use another card."
            case .inlineSecurityCodeInvalid: "Enter the {n}-digit security code of your card."
            case .inlineBrandNotAccepted: "{brand} cards are not accepted here. Use another card."
            }
        }
    }

    static let french: [Key: String] = [
        .pageTitle: "Paiement", .payTo: "Payer", .total: "Total", .acceptedCards: "Cartes acceptées",
        .savedCards: "Vos cartes enregistrées", .useNewCard: "Utiliser une nouvelle carte",
        .cardDetails: "Informations de la carte", .cardNumber: "Numéro de carte",
        .cardNumberHint: "Les 12 à 19 chiffres au recto de votre carte", .expiry: "Date d'expiration",
        .expiryHint: "MM/AA", .securityCode: "Code de sécurité",
        .securityCodeHint: "3 chiffres au verso, 4 au recto pour American Express", .cardHolderName: "Nom sur la carte",
        .billingAddress: "Adresse de facturation", .shippingAddress: "Adresse de livraison",
        .sameAsBilling: "Identique à l'adresse de facturation", .line1: "Adresse",
        .line2: "Appartement, bâtiment (facultatif)", .city: "Ville", .postalCode: "Code postal",
        .region: "Région (facultatif)", .country: "Pays", .countryHint: "Code à deux lettres, par exemple FR ou US",
        .contact: "Contact", .email: "E-mail (facultatif)", .phone: "Téléphone (facultatif)",
        .pairingConsent: "Mémoriser ma carte et mon adresse chez ce marchand pour payer plus vite",
        .pay: "Payer", .cancel: "Annuler et revenir chez le marchand", .errorSummary: "Veuillez corriger ceci :",
        .authenticationFailed: "Votre banque n'a pas pu vérifier cette carte. Réessayez ou utilisez une autre carte.",
        .securedBy: "Sécurisé par CardVault. Votre numéro de carte n'est jamais transmis au marchand.",
        .optional: "facultatif", .errorTitle: "Ce paiement ne peut pas être ouvert",
        .errorIntro: "Le marchand a envoyé une demande que CardVault ne peut pas accepter :",
        .expiredTitle: "Ce paiement a expiré",
        .expiredText: "Revenez sur le site du marchand et recommencez le paiement.",
        .waitingTitle: "Vérification en cours",
        .waitingText: "Terminez la vérification avec votre banque, puis continuez.",
        .continueLabel: "Continuer", .brandUnknown: "Type de carte pas encore reconnu",
        .brandRefused: "Ce type de carte n'est pas accepté ici", .cardEnding: "se terminant par", .expires: "expire",
        .notFoundTitle: "Paiement introuvable",
        .notFoundText: "Ce lien de paiement n'est pas valide. Revenez sur le site du marchand et recommencez.",
        .securedShort: "Paiement sécurisé par CardVault", .securityCodeHintShort: "3 ou 4 chiffres sur votre carte",
        .processing: "Paiement en cours…",
        .errorText:
            "Le lien de ce paiement n'est pas valide ou a été modifié. Revenez sur le site du marchand et recommencez "
            + "le paiement.",
        .reference: "Référence pour le marchand :", .chooseCountry: "Choisissez un pays",
        .somethingWentWrong: "Un problème est survenu de notre côté. Réessayez dans un instant.",
        .inlineNumberInvalid: "Le numéro de carte n'est pas valide. Vérifiez les chiffres de votre carte.",
        .inlineNumberIncomplete: "Le numéro de carte est incomplet.",
        .inlineExpiryInvalid: "Saisissez la date d'expiration au format MM/AA, par exemple 04/29.",
        .inlineExpiryPast: "Cette carte a expiré. Utilisez une autre carte.",
        .inlineSecurityCodeInvalid: "Saisissez le code de sécurité à {n} chiffres de votre carte.",
        .inlineBrandNotAccepted: "Les cartes {brand} ne sont pas acceptées ici. Utilisez une autre carte.",
    ]

    static let frenchMessages: [String: String] = [
        "enter the card number": "saisissez le numéro de carte",
        "the card number must be 12 to 19 digits": "le numéro de carte doit comporter 12 à 19 chiffres",
        "the card number is not valid": "le numéro de carte n'est pas valide",
        "enter the expiry date (MM/YY)": "saisissez la date d'expiration (MM/AA)",
        "enter the expiry date as MM/YY": "saisissez la date d'expiration au format MM/AA",
        "the card has expired or the date is too far ahead": "la carte a expiré ou la date est trop lointaine",
        "the expiry date is not valid or the card has expired":
            "la date d'expiration n'est pas valide ou la carte a expiré",
        "enter the security code": "saisissez le code de sécurité",
        "the security code is not valid for this card": "le code de sécurité n'est pas valide pour cette carte",
        "enter the name printed on the card": "saisissez le nom inscrit sur la carte",
        "the cardholder name must be at most 100 characters": "le nom ne doit pas dépasser 100 caractères",
        "enter the street address": "saisissez l'adresse",
        "enter the city": "saisissez la ville",
        "enter the postal code": "saisissez le code postal",
        "choose a country (two-letter ISO code)": "indiquez un pays (code ISO à deux lettres)",
        "the merchant does not ship to this country": "le marchand ne livre pas dans ce pays",
        "enter an e-mail address such as name@example.com": "saisissez une adresse e-mail, par exemple nom@example.com",
        "enter a phone number of 6 to 20 digits": "saisissez un numéro de téléphone de 6 à 20 chiffres",
        "the chosen saved card is not available": "la carte enregistrée choisie n'est pas disponible",
        "too many attempts; wait a minute and try again": "trop de tentatives ; patientez une minute puis réessayez",
    ]
}
