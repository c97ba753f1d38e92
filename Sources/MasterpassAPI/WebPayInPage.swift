import CardKit
import Checkout
import Foundation
import HTTPServer
import Payments

/// The hosted payment page of a web card pay-in, built from the hosted checkout's parts: the same card fields with
/// the brand logos in the number field, the same script (brand detection, inline checks, processing state), style
/// sheet, error summary and languages (en, fr from the pay-in's `Culture`).
enum WebPayInPage {
    /// The page's language: French for a `FR` culture, else English.
    static func locale(_ payIn: WebPayIn) -> CheckoutLocale {
        (payIn.culture ?? "").lowercased() == "fr" ? .frFR : .enUS
    }

    /// The brands the pay-in's `CardType` accepts, in the checkout's order.
    static func brands(_ payIn: WebPayIn) -> [CardBrand] {
        let accepted = MangopayCardType(rawValue: payIn.cardType)?.acceptedBrands ?? []
        return CardBrand.allCases.filter(accepted.contains)
    }

    /// What the shopper typed, to show again after an error (never the security code; the number only if valid).
    struct Values: Sendable {
        var cardNumber = ""
        var expiry = ""
        var cardHolderName = ""
    }

    static func form(
        _ view: WebPayInPageView, errors fieldErrors: [(String, String)], values: Values, secret: String
    ) -> String {
        let payIn = view.payIn
        let locale = locale(payIn)
        let text = CheckoutStrings(locale)
        let e = CheckoutPage.e
        var errors: [String: String] = [:]
        for (field, message) in fieldErrors where errors[field] == nil {
            errors[field] = text.sentence(text.message(message))
        }
        let amount: String
        if let currency = Currency(code: payIn.debitedFunds.currency) {
            amount = text.amount(
                Money(minorUnits: payIn.debitedFunds.amount, currency: currency).decimalString, currency: currency.code)
        } else {
            amount = String(payIn.debitedFunds.amount) + " " + payIn.debitedFunds.currency
        }
        let brands = brands(payIn)
        let merchant = view.merchantName.isEmpty ? text[.pageTitle] : view.merchantName
        var html = CheckoutPage.head(title: text[.pageTitle] + " \u{2013} " + merchant, locale: locale)
        html += "<main><div class=\"sheet\">"
        html += CheckoutPage.summaryHeader(merchant: merchant, amount: amount, text: text)
        html += "<div class=\"pane\">"
        html += CheckoutPage.errorSummary(fieldErrors.map { ($0.0, errors[$0.0] ?? $0.1) }, text: text)
        let base = "/payins/web/" + payIn.clientId + "/" + payIn.id
        html += "<form id=\"checkout-form\" method=\"post\" action=\"\(e(base))/pay\" novalidate>"
        html += "<input type=\"hidden\" name=\"s\" value=\"\(e(secret))\">"
        html += CheckoutPage.cardFields(
            text: text, brands: brands, errors: errors, number: errors["cardNumber"] == nil ? values.cardNumber : "",
            expiry: values.expiry, holder: values.cardHolderName, securityCode: true)
        html += CheckoutPage.deviceInputs()
        html += CheckoutPage.payButton(text: text, amount: amount)
        html += "</form>"
        html += "<form method=\"post\" action=\"\(e(base))/return?s=\(e(secret))&amp;cancel=1\">"
        html += "<button type=\"submit\" class=\"cancel\">\(e(text[.cancel]))</button></form>"
        html += "</div></div><footer>\(e(text[.securedBy]))</footer></main>"
        html += CheckoutPage.pageData(text: text, brands: brands)
        html += "<script src=\"/srci/assets/checkout.js\" defer></script>"
        return html + "</body></html>\n"
    }

    /// A short page without a way forward (unknown link, failure).
    static func message(title: CheckoutStrings.Key, text body: CheckoutStrings.Key, locale: CheckoutLocale) -> String {
        CheckoutPage.message(title: title, body: body, locale: locale, link: nil)
    }
}
