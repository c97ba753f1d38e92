import CardKit
import Foundation
import HTTPServer
import Payments

/// The built-in sandbox access control server: the page a 3-D Secure redirect leads to. It shows the
/// amount and the masked card, asks for the one-time code, and on submit or cancel records the answer
/// and sends the browser (303) to the merchant's return URL with `transactionId`. Works without JavaScript.
struct SandboxACSPage: Sendable {
    let services: MerchantServices

    /// Headers of every page: no caching, no referrer (the link carries its secret), no framing by others,
    /// no scripts.
    static let pageHeaders: [(String, String)] = [
        ("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store"), ("Referrer-Policy", "no-referrer"),
        // frame-ancestors 'none' (and X-Frame-Options for older browsers): no other site can frame the
        // challenge page to capture the shopper's one-time code or click through it for them.
        (
            "Content-Security-Policy",
            "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'"
        ),
        ("X-Frame-Options", "DENY"), ("X-Content-Type-Options", "nosniff"),
    ]

    func show(_ request: Request) async -> Response {
        let secret = (try? request.query())?["s"] ?? ""
        do {
            let view = try await services.payIns.challenge(
                kind: request.parameters["kind"] ?? "", clientId: request.parameters["clientId"] ?? "",
                id: request.parameters["id"] ?? "", secret: secret)
            return Self.page(
                status: .ok,
                Self.challengeHTML(
                    view, action: request.path, secret: secret,
                    challengeCode: services.payIns.sandbox.challengeCode))
        } catch {
            return Self.page(
                status: .notFound,
                Self.messageHTML(
                    title: "Authentication link not valid",
                    text: "This authentication link is not valid. Return to the merchant and try again."))
        }
    }

    func answer(_ request: Request) async -> Response {
        guard let form = try? request.formFields(), let secret = form["s"] else {
            return Self.page(
                status: .badRequest,
                Self.messageHTML(
                    title: "Authentication not sent", text: "The authentication form was incomplete. Please try again.")
            )
        }
        let cancelled = form["action"] == "cancel"
        let code = cancelled ? nil : String((form["code"] ?? "").prefix(32))
        do {
            let (_, returnURL) = try await services.payIns.answerChallenge(
                kind: request.parameters["kind"] ?? "", clientId: request.parameters["clientId"] ?? "",
                id: request.parameters["id"] ?? "", secret: secret, code: code)
            var response = Response(status: HTTPStatus(303), body: [])
            response.headers.set("Location", returnURL)
            response.headers.set("Cache-Control", "no-store")
            response.headers.set("Referrer-Policy", "no-referrer")
            return response
        } catch let error as PaymentsError where error.code == .notFound {
            return Self.page(
                status: .notFound,
                Self.messageHTML(
                    title: "Authentication link not valid",
                    text: "This authentication link is not valid. Return to the merchant and try again."))
        } catch {
            return Self.page(
                status: .serviceUnavailable,
                Self.messageHTML(
                    title: "Authentication not recorded", text: "Your answer could not be recorded. Please try again."))
        }
    }

    /// The 429 page (``RateLimitGate`` sets the status and `Retry-After`).
    static func tooManyRequests(retryAfter seconds: Int) -> Response {
        page(
            status: .tooManyRequests,
            messageHTML(
                title: "Too many attempts",
                text: "Too many requests came from your network. Wait \(seconds) seconds and try again."))
    }

    static func page(status: HTTPStatus, _ html: String) -> Response {
        var response = Response(status: status, body: Array(html.utf8))
        for (name, value) in pageHeaders { response.headers.set(name, value) }
        return response
    }

    /// One column that fits a 320 px screen: the card never exceeds the viewport, long references wrap.
    static let style = """
        *{box-sizing:border-box}\
        body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f3f4f6;color:#111827;margin:0;\
        line-height:1.45}\
        main{width:auto;max-width:26rem;margin:1.5rem auto;background:#fff;border:1px solid #d1d5db;\
        border-radius:.5rem;padding:1.25rem}\
        @media (max-width:30rem){main{margin:0;border-width:0 0 1px;border-radius:0;padding:1rem}}\
        h1{font-size:1.25rem;margin:0 0 .75rem}p{margin:.5rem 0}\
        dl{display:grid;grid-template-columns:minmax(5rem,auto) minmax(0,1fr);gap:.25rem 1rem;margin:0 0 1rem}\
        dt{color:#374151}dd{margin:0;font-weight:600;overflow-wrap:anywhere;min-width:0}\
        .amount{font-size:1.125rem}label{display:block;font-weight:600;margin:.5rem 0 .25rem}\
        input{font-size:1.25rem;padding:.5rem;width:100%;max-width:100%;border:2px solid #4b5563;border-radius:.25rem;\
        letter-spacing:.2em}\
        input:focus,button:focus{outline:3px solid #1d4ed8;outline-offset:2px}\
        .actions{display:flex;flex-wrap:wrap;gap:.75rem;margin-top:1rem}\
        button{font-size:1rem;padding:.6rem 1.2rem;border-radius:.25rem;border:2px solid #1e3a8a;cursor:pointer;\
        flex:1 1 8rem}\
        .primary{background:#1e3a8a;color:#fff}.secondary{background:#fff;color:#1e3a8a}\
        .hint,.notice{font-size:.875rem;color:#374151}
        """

    static func challengeHTML(_ view: ChallengeView, action: String, secret: String, challengeCode: String) -> String {
        let text = SandboxACSStrings(for: view)
        let shown = view.display?.amount ?? view.amount
        let amount = view.isCardValidation && shown.amount == 0 ? text.noAmount : text.amount(shown)
        let merchant = view.display?.merchantName ?? view.statementDescriptor ?? text.genericMerchant
        let details = """
            <dl><dt>\(HTMLText.escape(text.amountLabel))</dt><dd class="amount" id="acs-amount">\
            \(HTMLText.escape(amount))</dd>\
            <dt>\(HTMLText.escape(text.merchantLabel))</dt><dd id="acs-merchant">\(HTMLText.escape(merchant))</dd>\
            <dt>\(HTMLText.escape(text.cardLabel))</dt><dd>\(HTMLText.escape(view.cardAlias))</dd>\
            <dt>\(HTMLText.escape(text.referenceLabel))</dt><dd>\(HTMLText.escape(view.transactionId))</dd></dl>
            """
        let body: String
        if view.isFinal {
            body = """
                <h1>\(HTMLText.escape(text.completeTitle))</h1>\(details)\
                <p id="acs-outcome">\(HTMLText.escape(text.outcome(status: view.status, cardValidation: view.isCardValidation)))</p>\
                <form method="post" action="\(HTMLText.escape(action))">\
                <input type="hidden" name="s" value="\(HTMLText.escape(secret))">\
                <div class="actions"><button class="primary" type="submit" name="action" value="return">\
                \(HTMLText.escape(text.returnToMerchant))</button></div></form>
                """
        } else {
            let title = view.isCardValidation && view.display?.amount == nil ? text.confirmCardTitle : text.confirmTitle
            body = """
                <h1>\(HTMLText.escape(title))</h1>\
                <p>\(HTMLText.escape(text.intro(merchant: merchant)))</p>\(details)\
                <form method="post" action="\(HTMLText.escape(action))">\
                <input type="hidden" name="s" value="\(HTMLText.escape(secret))">\
                <label for="code">\(HTMLText.escape(text.codeLabel))</label>\
                <input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" \
                maxlength="32" aria-describedby="code-hint" autofocus>\
                <p id="code-hint" class="hint">\(HTMLText.escape(text.codeHint(challengeCode)))</p>\
                <div class="actions"><button class="primary" type="submit" name="action" value="submit">\
                \(HTMLText.escape(text.submit))</button>\
                <button class="secondary" type="submit" name="action" value="cancel" formnovalidate>\
                \(HTMLText.escape(text.cancel))</button></div>\
                </form><p class="notice">\(HTMLText.escape(text.sandboxNotice))</p>
                """
        }
        return document(title: text.documentTitle, body: body, language: text.languageTag)
    }

    static func messageHTML(title: String, text: String) -> String {
        document(
            title: title, body: "<h1>\(HTMLText.escape(title))</h1><p>\(HTMLText.escape(text))</p>", language: "en")
    }

    private static func document(title: String, body: String, language: String) -> String {
        """
        <!DOCTYPE html><html lang="\(HTMLText.escape(language))"><head><meta charset="utf-8">\
        <meta name="viewport" content="width=device-width, initial-scale=1">\
        <title>\(HTMLText.escape(title)) · CardVault sandbox ACS</title><style>\(style)</style></head>\
        <body><main id="acs">\(body)</main></body></html>
        """
    }
}
