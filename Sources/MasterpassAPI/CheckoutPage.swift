import CardKit
import Checkout
import HTTPServer

/// What the shopper typed, to show again after an error. Never the card number or the security code.
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
}

/// The hosted checkout pages as pure functions from state to HTML. Every interpolated value is escaped with
/// ``HTMLText/escape(_:)``; nothing here sees a card number or security code.
enum CheckoutPage {
    /// The names of the hidden device-signal fields; the script fills them, the server reads them for profiling.
    static let deviceFields = [
        "javascriptEnabled", "screenWidth", "screenHeight", "colorDepth", "timeZoneOffset", "language", "platform",
        "javaEnabled", "touchSupport", "hardwareConcurrency", "deviceMemory",
    ]

    /// The checkout form of `session`, with `fieldErrors` next to their fields and in a summary.
    static func form(
        session: CheckoutSession, fieldErrors: [CheckoutFieldError], values: CheckoutFormValues = CheckoutFormValues()
    ) -> String {
        let request = session.request
        let text = CheckoutStrings(request.locale)
        let errors = Dictionary(
            fieldErrors.map { ($0.field, text.message($0.message)) }, uniquingKeysWith: { a, _ in a })
        let amount = text.amount(request.amount.decimalString, currency: request.currency.code)
        let brands = MasterpassCardType.allCases.filter(request.allowedCardTypes.contains).map(\.brand)
        let base = "/srci/" + session.sessionId
        var html = head(title: text[.pageTitle] + " \u{2013} " + session.merchantName, locale: request.locale)
        html += "<main><div class=\"sheet\">"
        html += "<header class=\"merchant\"><h1>\(e(session.merchantName))</h1>"
        html +=
            "<p class=\"amount\"><span class=\"visually-hidden\">\(e(text[.total])) </span>\(e(amount))</p></header>"
        html += "<p id=\"accepted-label\" class=\"hint\">\(e(text[.acceptedCards]))</p>"
        html += "<ul class=\"brands\" aria-labelledby=\"accepted-label\">"
        for brand in brands {
            html += "<li data-brand=\"\(e(brand.id))\">\(e(brand.displayName))</li>"
        }
        html += "</ul>"
        if !fieldErrors.isEmpty || session.problem != nil {
            html += "<div class=\"summary\" role=\"alert\" tabindex=\"-1\" id=\"error-summary\">"
            html += "<h2>\(e(text[.errorSummary]))</h2><ul>"
            if session.problem == .authenticationFailed {
                html += "<li>\(e(text[.authenticationFailed]))</li>"
            }
            for error in fieldErrors {
                html += "<li><a href=\"#\(e(error.field))\">\(e(errors[error.field] ?? error.message))</a></li>"
            }
            html += "</ul></div>"
        }
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
        html += "<fieldset id=\"card-fields\"><legend>\(e(text[.cardDetails]))</legend>"
        html += input(
            "cardNumber", label: text[.cardNumber], hint: text[.cardNumberHint], value: "", errors: errors,
            attributes: "inputmode=\"numeric\" autocomplete=\"cc-number\" maxlength=\"23\" spellcheck=\"false\"")
        html += "<p id=\"card-brand\" class=\"brand-badge\" aria-live=\"polite\"></p>"
        html += "<div class=\"row\"><div>"
        html += input(
            "expiry", label: text[.expiry], hint: text[.expiryHint], value: values.expiry, errors: errors,
            attributes: "inputmode=\"numeric\" autocomplete=\"cc-exp\" maxlength=\"7\"")
        html += "</div>"
        if request.cvc2Support {
            html += "<div>"
            html += input(
                "securityCode", label: text[.securityCode], hint: text[.securityCodeHint], value: "", errors: errors,
                attributes: "inputmode=\"numeric\" autocomplete=\"cc-csc\" maxlength=\"4\"")
            html += "</div>"
        }
        html += "</div>"
        html += input(
            "cardHolderName", label: text[.cardHolderName], hint: nil, value: values.cardHolderName, errors: errors,
            attributes: "autocomplete=\"cc-name\" maxlength=\"100\"")
        html += "</fieldset>"
        html += addressFields(
            "billing", legend: text[.billingAddress], values: values.billing, errors: errors, text: text,
            section: "billing")
        if !request.suppressShippingAddress {
            html += "<fieldset><legend>\(e(text[.shippingAddress]))</legend>"
            html += "<label class=\"check\"><input type=\"checkbox\" id=\"shippingSameAsBilling\" "
            html += "name=\"shippingSameAsBilling\" value=\"true\"" + (values.shippingSameAsBilling ? " checked" : "")
            html += "> \(e(text[.sameAsBilling]))</label>"
            html += "<div id=\"shipping-fields\">"
            html += addressFields(
                "shipping", legend: nil, values: values.shipping, errors: errors, text: text, section: "shipping")
            html += "</div></fieldset>"
        }
        html += "<fieldset><legend>\(e(text[.contact]))</legend>"
        html += input(
            "email", label: text[.email], hint: nil, value: values.email, errors: errors,
            attributes: "autocomplete=\"email\" maxlength=\"254\"", type: "email")
        html += input(
            "phone", label: text[.phone], hint: nil, value: values.phone, errors: errors,
            attributes: "autocomplete=\"tel\" maxlength=\"30\"", type: "tel")
        html += "</fieldset>"
        if request.userId != nil {
            html += "<label class=\"check\"><input type=\"checkbox\" id=\"pairingConsent\" name=\"pairingConsent\" "
            html +=
                "value=\"true\"" + (values.pairingConsent ? " checked" : "") + "> \(e(text[.pairingConsent]))</label>"
        }
        for field in deviceFields {
            html +=
                "<input type=\"hidden\" name=\"\(e(field))\" value=\"\(field == "javascriptEnabled" ? "false" : "")\">"
        }
        html += "<button type=\"submit\" class=\"pay\">\(e(text[.pay] + " " + amount))</button>"
        html += "</form>"
        html += "<form method=\"post\" action=\"\(e(base))/cancel\">"
        html += "<button type=\"submit\" class=\"cancel\">\(e(text[.cancel]))</button></form>"
        html += "</div><footer>\(e(text[.securedBy]))</footer></main>"
        html += pageData(session: session, text: text, brands: brands)
        html += "<script src=\"/srci/assets/checkout.js\" defer></script>"
        return html + "</body></html>\n"
    }

    /// The page for a checkout URL CardVault refuses: what is wrong, field by field, and no way forward.
    static func error(_ error: CheckoutError, locale: CheckoutLocale) -> String {
        let text = CheckoutStrings(locale)
        var html = head(title: text[.errorTitle], locale: locale)
        html += "<main><div class=\"sheet\"><h1>\(e(text[.errorTitle]))</h1>"
        html += "<p>\(e(text[.errorIntro]))</p><ul class=\"summary\" role=\"alert\">"
        if error.fieldErrors.isEmpty {
            html += "<li>\(e(error.message))</li>"
        }
        for field in error.fieldErrors {
            html += "<li><strong>\(e(field.field))</strong>: \(e(field.message))</li>"
        }
        html += "</ul></div></main></body></html>\n"
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
        type: String = "text"
    ) -> String {
        var described: [String] = []
        if hint != nil { described.append(name + "-hint") }
        if errors[name] != nil { described.append(name + "-error") }
        var html = "<label for=\"\(e(name))\">\(e(label))"
        if let hint { html += "<span class=\"hint\" id=\"\(e(name))-hint\">\(e(hint))</span>" }
        html += "</label><input type=\"\(e(type))\" id=\"\(e(name))\" name=\"\(e(name))\" value=\"\(e(value))\" "
        html += attributes
        if !described.isEmpty { html += " aria-describedby=\"\(e(described.joined(separator: " ")))\"" }
        if errors[name] != nil { html += " aria-invalid=\"true\"" }
        html += ">" + errorLine(name, errors)
        return html
    }

    static func errorLine(_ name: String, _ errors: [String: String]) -> String {
        guard let message = errors[name] else { return "" }
        return "<p class=\"field-error\" id=\"\(e(name))-error\">\(e(message))</p>"
    }

    static func addressFields(
        _ prefix: String, legend: String?, values: CheckoutAddressForm, errors: [String: String],
        text: CheckoutStrings, section: String
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
        html += input(
            prefix + "Country", label: text[.country], hint: text[.countryHint], value: values.country ?? "",
            errors: errors, attributes: "autocomplete=\"\(section) country\" maxlength=\"2\"")
        html += "</div></div>"
        return html + (legend == nil ? "" : "</fieldset>")
    }

    /// The per-page data the script reads: allowed brand ids and a few texts, as JSON inside a data element.
    static func pageData(session: CheckoutSession, text: CheckoutStrings, brands: [CardBrand]) -> String {
        let allowed = brands.map { HTMLText.jsonString($0.id) }.joined(separator: ",")
        return "<script type=\"application/json\" id=\"checkout-data\">{\"allowed\":[\(allowed)],\"text\":{"
            + "\"brandUnknown\":\(HTMLText.jsonString(text[.brandUnknown])),"
            + "\"brandRefused\":\(HTMLText.jsonString(text[.brandRefused]))}}</script>"
    }

    static func twoDigits(_ value: Int) -> String { value < 10 ? "0" + String(value) : String(value) }

    static func e(_ text: String) -> String { HTMLText.escape(text) }
}
