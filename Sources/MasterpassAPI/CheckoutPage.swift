import CardKit
import Checkout
import Foundation
import HTTPServer

/// What the shopper typed, to show again after an error. Never the security code; the card number only when valid.
struct CheckoutFormValues: Sendable, Equatable {
    var cardHolderName = ""
    var expiry = ""
    var billing = CheckoutAddressForm()
    var shipping = CheckoutAddressForm()
    var shippingSameAsBilling = false
    var email = ""
    var phone = ""
    var pairingConsent = false
    var savedCardId = ""
    /// The card number, shown again only when the server found it valid (never the security code).
    var cardNumber = ""
}

/// The hosted checkout pages as pure functions from state to HTML. Every interpolated value is escaped with
/// ``HTMLText/escape(_:)``; nothing here sees a card number or security code.
enum CheckoutPage {
    /// The names of the hidden device-signal fields; the script fills them, the server reads them for profiling.
    static let deviceFields = [
        "javascriptEnabled", "screenWidth", "screenHeight", "colorDepth", "timeZoneOffset", "language", "platform",
        "javaEnabled", "touchSupport", "hardwareConcurrency", "deviceMemory",
    ]

    /// The checkout form of `session`, with `fieldErrors` next to their fields and in a summary that takes the
    /// focus. Valid fields keep what the shopper typed (`values`); the security code is never written back.
    static func form(
        session: CheckoutSession, fieldErrors: [CheckoutFieldError], values: CheckoutFormValues = CheckoutFormValues()
    ) -> String {
        let request = session.request
        let text = CheckoutStrings(request.locale)
        let errors = Dictionary(
            fieldErrors.map { ($0.field, text.sentence(text.message($0.message))) }, uniquingKeysWith: { a, _ in a })
        let amount = text.amount(request.amount.decimalString, currency: request.currency.code)
        let brands = MasterpassCardType.allCases.filter(request.allowedCardTypes.contains).map(\.brand)
        let base = "/srci/" + session.sessionId
        let mode = session.addressFields ?? .full
        var html = head(title: text[.pageTitle] + " \u{2013} " + session.merchantName, locale: request.locale)
        html += "<main><div class=\"sheet\">"
        html += summaryHeader(merchant: session.merchantName, amount: amount, text: text)
        html += "<div class=\"pane\">"
        var summary: [(String, String)] = []
        if session.problem == .authenticationFailed { summary.append(("", text[.authenticationFailed])) }
        for error in fieldErrors { summary.append((error.field, errors[error.field] ?? error.message)) }
        html += errorSummary(summary, text: text)
        // The page's language rides along in the form's URL (a page view stores nothing).
        html +=
            "<form id=\"checkout-form\" method=\"post\" action=\"\(e(base))/submit?locale=\(e(request.locale.rawValue))\" novalidate>"
        if !session.savedCards.isEmpty {
            html += "<fieldset class=\"saved\"><legend>\(e(text[.savedCards]))</legend>"
            for (index, saved) in session.savedCards.enumerated() {
                let checked = values.savedCardId.isEmpty ? index == 0 : values.savedCardId == saved.cardId
                let label =
                    saved.card.brand.displayName + " " + text[.cardEnding] + " " + saved.card.lastFour + ", "
                    + text[.expires] + " " + twoDigits(saved.card.expiryMonth) + "/"
                    + twoDigits(saved.card.expiryYear % 100)
                html += "<label class=\"check\"><input type=\"radio\" name=\"savedCardId\" value=\"\(e(saved.cardId))\""
                html += (checked ? " checked" : "") + "> \(e(label))</label>"
            }
            html +=
                "<label class=\"check\"><input type=\"radio\" name=\"savedCardId\" value=\"\"> "
                + "\(e(text[.useNewCard]))</label>"
            html += errorLine("savedCardId", errors)
            html += "</fieldset>"
        }
        html += cardFields(
            text: text, brands: brands, errors: errors, number: values.cardNumber, expiry: values.expiry,
            holder: values.cardHolderName, securityCode: request.cvc2Support)
        switch mode {
        case .none: break
        case .postalCodeAndCountry:
            html += "<fieldset><legend>\(e(text[.billingAddress]))</legend><div class=\"row\"><div>"
            html += input(
                "billingPostalCode", label: text[.postalCode], hint: nil, value: values.billing.postalCode ?? "",
                errors: errors, attributes: "autocomplete=\"billing postal-code\" maxlength=\"16\"")
            html += "</div><div>"
            html += countrySelect(
                "billingCountry", text: text, value: values.billing.country, errors: errors, section: "billing",
                only: nil)
            html += "</div></div></fieldset>"
        case .full:
            html += addressFields(
                "billing", legend: text[.billingAddress], values: values.billing, errors: errors, text: text,
                section: "billing", only: nil)
        }
        if !request.suppressShippingAddress {
            html += "<fieldset><legend>\(e(text[.shippingAddress]))</legend>"
            if mode == .full {
                html += "<label class=\"check\"><input type=\"checkbox\" id=\"shippingSameAsBilling\" "
                html +=
                    "name=\"shippingSameAsBilling\" value=\"true\"" + (values.shippingSameAsBilling ? " checked" : "")
                html += "> \(e(text[.sameAsBilling]))</label>"
            }
            html += "<div id=\"shipping-fields\">"
            html += addressFields(
                "shipping", legend: nil, values: values.shipping, errors: errors, text: text, section: "shipping",
                only: request.shippingCountries)
            html += "</div></fieldset>"
        }
        if mode == .full {
            html += "<fieldset><legend>\(e(text[.contact]))</legend><div class=\"row\"><div>"
            html += input(
                "email", label: text[.email], hint: nil, value: values.email, errors: errors,
                attributes: "autocomplete=\"email\" maxlength=\"254\"", type: "email")
            html += "</div><div>"
            html += input(
                "phone", label: text[.phone], hint: nil, value: values.phone, errors: errors,
                attributes: "autocomplete=\"tel\" maxlength=\"30\"", type: "tel")
            html += "</div></div></fieldset>"
        }
        if request.userId != nil {
            html += "<label class=\"check\"><input type=\"checkbox\" id=\"pairingConsent\" name=\"pairingConsent\" "
            html +=
                "value=\"true\"" + (values.pairingConsent ? " checked" : "") + "> \(e(text[.pairingConsent]))</label>"
        }
        html += deviceInputs()
        html += payButton(text: text, amount: amount)
        html += "</form>"
        html += "<form method=\"post\" action=\"\(e(base))/cancel\">"
        html += "<button type=\"submit\" class=\"cancel\">\(e(text[.cancel]))</button></form>"
        html += "</div></div><footer>\(e(text[.securedBy]))</footer></main>"
        html += pageData(text: text, brands: brands)
        html += "<script src=\"/srci/assets/checkout.js\" defer></script>"
        return html + "</body></html>\n"
    }

    /// The merchant and the amount, at the top on a phone and in the left column on a desktop.
    static func summaryHeader(merchant: String, amount: String, text: CheckoutStrings) -> String {
        "<header class=\"merchant\"><h1>\(e(merchant))</h1>"
            + "<p class=\"amount\"><span class=\"visually-hidden\">\(e(text[.total])) </span>\(e(amount))</p>"
            + "<p class=\"secure hint\">\(e(text[.securedShort]))</p></header>"
    }

    /// The error summary (focused on load), linking to each field; `("", text)` is a line without a field.
    static func errorSummary(_ lines: [(String, String)], text: CheckoutStrings) -> String {
        guard !lines.isEmpty else { return "" }
        var html = "<div class=\"summary\" role=\"alert\" tabindex=\"-1\" id=\"error-summary\" autofocus "
        html +=
            "aria-labelledby=\"error-summary-title\"><h2 id=\"error-summary-title\">\(e(text[.errorSummary]))</h2><ul>"
        for (field, message) in lines {
            html += field.isEmpty ? "<li>\(e(message))</li>" : "<li><a href=\"#\(e(field))\">\(e(message))</a></li>"
        }
        return html + "</ul></div>"
    }

    /// Number (with the accepted brands' logos inside the field), expiry, security code and name on card.
    static func cardFields(
        text: CheckoutStrings, brands: [CardBrand], errors: [String: String], number: String, expiry: String,
        holder: String, securityCode: Bool
    ) -> String {
        var html = "<fieldset id=\"card-fields\"><legend>\(e(text[.cardDetails]))</legend>"
        html += "<div class=\"number-field\">"
        html += input(
            "cardNumber", label: text[.cardNumber], hint: nil, value: number, errors: errors,
            attributes:
                "inputmode=\"numeric\" autocomplete=\"cc-number\" maxlength=\"23\" spellcheck=\"false\" "
                + "placeholder=\"1234 1234 1234 1234\"",
            after: brandList(brands, text: text))
        html += "</div>"
        html += "<p id=\"card-brand\" class=\"brand-badge\" aria-live=\"polite\"></p>"
        html += "<div class=\"row\"><div>"
        html += input(
            "expiry", label: text[.expiry], hint: text[.expiryHint], value: expiry, errors: errors,
            attributes: "inputmode=\"numeric\" autocomplete=\"cc-exp\" maxlength=\"7\"")
        html += "</div>"
        if securityCode {
            html += "<div>"
            html += input(
                "securityCode", label: text[.securityCode], hint: text[.securityCodeHintShort], value: "",
                errors: errors, attributes: "inputmode=\"numeric\" autocomplete=\"cc-csc\" maxlength=\"4\"")
            html += "</div>"
        }
        html += "</div>"
        html += input(
            "cardHolderName", label: text[.cardHolderName], hint: nil, value: holder, errors: errors,
            attributes: "autocomplete=\"cc-name\" maxlength=\"100\"")
        return html + "</fieldset>"
    }

    /// The accepted brands as logos, labelled for screen readers ("Accepted cards: Visa, Mastercard").
    static func brandList(_ brands: [CardBrand], text: CheckoutStrings) -> String {
        var html = "<ul class=\"brands\" aria-label=\"\(e(text[.acceptedCards]))\">"
        for brand in brands {
            html += "<li data-brand=\"\(e(brand.id))\">\(CheckoutBrandLogos.svg(brand))</li>"
        }
        return html + "</ul>"
    }

    /// The hidden device-signal inputs the script fills.
    static func deviceInputs() -> String {
        var html = ""
        for field in deviceFields {
            html +=
                "<input type=\"hidden\" name=\"\(e(field))\" value=\"\(field == "javascriptEnabled" ? "false" : "")\">"
        }
        return html
    }

    /// The Pay button; the script switches it to its processing state on submit.
    static func payButton(text: CheckoutStrings, amount: String) -> String {
        "<button type=\"submit\" class=\"pay\" data-processing=\"\(e(text[.processing]))\">"
            + "<span class=\"label\">\(e(text[.pay] + " " + amount))</span></button>"
    }

    /// The page for a checkout URL CardVault refuses. The shopper sees what to do and a reference to quote; what
    /// exactly was wrong is for the merchant's developers, in the daemon's log under that reference.
    static func error(locale: CheckoutLocale, reference: String, text detail: String? = nil) -> String {
        let text = CheckoutStrings(locale)
        var html = head(title: text[.errorTitle], locale: locale)
        html += "<main><div class=\"sheet message\"><h1>\(e(text[.errorTitle]))</h1>"
        html += "<p>\(e(detail ?? text[.errorText]))</p>"
        if !reference.isEmpty {
            html += "<p class=\"hint\">\(e(text[.reference])) <code>\(e(reference))</code></p>"
        }
        html += "</div></main></body></html>\n"
        return html
    }

    /// The page for an unknown or malformed checkout link.
    static func notFound(locale: CheckoutLocale) -> String {
        message(title: .notFoundTitle, body: .notFoundText, locale: locale, link: nil)
    }

    /// The page for an expired checkout.
    static func expired(locale: CheckoutLocale) -> String {
        message(title: .expiredTitle, body: .expiredText, locale: locale, link: nil)
    }

    /// The page shown while the shopper is at the challenge (for example after going back).
    static func waiting(session: CheckoutSession) -> String {
        message(
            title: .waitingTitle, body: .waitingText, locale: session.request.locale,
            link: "/srci/" + session.sessionId + "/return")
    }

    static func message(
        title: CheckoutStrings.Key, body: CheckoutStrings.Key, locale: CheckoutLocale, link: String?
    ) -> String {
        let text = CheckoutStrings(locale)
        var html = head(title: text[title], locale: locale)
        html += "<main><div class=\"sheet\"><h1>\(e(text[title]))</h1><p>\(e(text[body]))</p>"
        if let link {
            html += "<p><a href=\"\(e(link))\">\(e(text[.continueLabel]))</a></p>"
        }
        return html + "</div></main></body></html>\n"
    }

    // MARK: - Pieces

    static func head(title: String, locale: CheckoutLocale) -> String {
        "<!DOCTYPE html><html lang=\"\(e(locale.languageTag))\"><head><meta charset=\"utf-8\">"
            + "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            + "<meta name=\"referrer\" content=\"no-referrer\">"
            + "<title>\(e(title))</title><link rel=\"stylesheet\" href=\"/srci/assets/checkout.css\"></head><body>"
    }

    static func input(
        _ name: String, label: String, hint: String?, value: String, errors: [String: String], attributes: String,
        type: String = "text", after: String = ""
    ) -> String {
        var described: [String] = []
        if hint != nil { described.append(name + "-hint") }
        if errors[name] != nil { described.append(name + "-error") }
        var html = "<label for=\"\(e(name))\">\(e(label))"
        if let hint { html += "<span class=\"hint\" id=\"\(e(name))-hint\">\(e(hint))</span>" }
        html += "</label>" + (after.isEmpty ? "" : "<div class=\"with-logos\">")
        html += "<input type=\"\(e(type))\" id=\"\(e(name))\" name=\"\(e(name))\" value=\"\(e(value))\" "
        html += attributes
        if !described.isEmpty { html += " aria-describedby=\"\(e(described.joined(separator: " ")))\"" }
        if errors[name] != nil { html += " aria-invalid=\"true\"" }
        html += ">" + (after.isEmpty ? "" : after + "</div>") + errorLine(name, errors)
        return html
    }

    static func errorLine(_ name: String, _ errors: [String: String]) -> String {
        guard let message = errors[name] else { return "" }
        return "<p class=\"field-error\" id=\"\(e(name))-error\">\(e(message))</p>"
    }

    static func addressFields(
        _ prefix: String, legend: String?, values: CheckoutAddressForm, errors: [String: String],
        text: CheckoutStrings, section: String, only countries: [String]?
    ) -> String {
        var html = legend.map { "<fieldset><legend>\(e($0))</legend>" } ?? ""
        html += input(
            prefix + "Line1", label: text[.line1], hint: nil, value: values.line1 ?? "", errors: errors,
            attributes: "autocomplete=\"\(section) address-line1\" maxlength=\"100\"")
        html += input(
            prefix + "Line2", label: text[.line2], hint: nil, value: values.line2 ?? "", errors: errors,
            attributes: "autocomplete=\"\(section) address-line2\" maxlength=\"100\"")
        html += "<div class=\"row\"><div>"
        html += input(
            prefix + "City", label: text[.city], hint: nil, value: values.city ?? "", errors: errors,
            attributes: "autocomplete=\"\(section) address-level2\" maxlength=\"60\"")
        html += "</div><div>"
        html += input(
            prefix + "PostalCode", label: text[.postalCode], hint: nil, value: values.postalCode ?? "", errors: errors,
            attributes: "autocomplete=\"\(section) postal-code\" maxlength=\"16\"")
        html += "</div></div><div class=\"row\"><div>"
        html += input(
            prefix + "Subdivision", label: text[.region], hint: nil, value: values.subdivision ?? "", errors: errors,
            attributes: "autocomplete=\"\(section) address-level1\" maxlength=\"10\"")
        html += "</div><div>"
        html += countrySelect(
            prefix + "Country", text: text, value: values.country, errors: errors, section: section, only: countries)
        html += "</div></div>"
        return html + (legend == nil ? "" : "</fieldset>")
    }

    /// The country as a select of ISO 3166 names in the page's language (`only`: the countries the merchant
    /// ships to). A value that is no country code selects nothing.
    static func countrySelect(
        _ name: String, text: CheckoutStrings, value: String?, errors: [String: String], section: String,
        only: [String]?
    ) -> String {
        let chosen = (value ?? "").uppercased()
        var html = "<label for=\"\(e(name))\">\(e(text[.country]))</label>"
        html += "<select id=\"\(e(name))\" name=\"\(e(name))\" autocomplete=\"\(e(section)) country\""
        if errors[name] != nil { html += " aria-invalid=\"true\" aria-describedby=\"\(e(name))-error\"" }
        html += "><option value=\"\"\(chosen.isEmpty ? " selected" : "")>\(e(text[.chooseCountry]))</option>"
        let allowed = only.map(Set.init)
        let names = CheckoutCountries.all
            .filter { allowed?.contains($0.code) ?? true }
            .map { (code: $0.code, name: text.locale == .frFR ? $0.french : $0.english) }
            .sorted {
                $0.name.compare($1.name, options: [.caseInsensitive, .diacriticInsensitive]) == .orderedAscending
            }
        for country in names {
            html += "<option value=\"\(e(country.code))\"\(country.code == chosen ? " selected" : "")>"
            html += "\(e(country.name))</option>"
        }
        return html + "</select>" + errorLine(name, errors)
    }

    /// The per-page data the script reads: allowed brand ids and a few texts, as JSON inside a data element.
    static func pageData(text: CheckoutStrings, brands: [CardBrand]) -> String {
        let allowed = brands.map { HTMLText.jsonString($0.id) }.joined(separator: ",")
        let keys: [(String, CheckoutStrings.Key)] = [
            ("brandUnknown", .brandUnknown), ("brandRefused", .brandRefused), ("numberInvalid", .inlineNumberInvalid),
            ("numberIncomplete", .inlineNumberIncomplete), ("expiryInvalid", .inlineExpiryInvalid),
            ("expiryPast", .inlineExpiryPast), ("cvcInvalid", .inlineSecurityCodeInvalid),
            ("brandNotAccepted", .inlineBrandNotAccepted),
        ]
        let texts = keys.map { "\"\($0.0)\":" + HTMLText.jsonString(text[$0.1]) }.joined(separator: ",")
        return "<script type=\"application/json\" id=\"checkout-data\">{\"allowed\":[\(allowed)],\"text\":{"
            + texts + "}}</script>"
    }

    static func twoDigits(_ value: Int) -> String { value < 10 ? "0" + String(value) : String(value) }

    static func e(_ text: String) -> String { HTMLText.escape(text) }
}
