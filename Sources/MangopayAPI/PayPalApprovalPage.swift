import HTTPServer
import Payments

/// The sandbox PayPal approval page: the buyer's name, the order's items and total, and Approve and Cancel buttons.
/// An answer records the outcome and sends the browser (303) to the merchant's `ReturnURL` (approved) or
/// `CancelURL` with `transactionId`. The link's secret is single-use in effect: once answered, the page shows the
/// outcome only. Works without JavaScript.
struct PayPalApprovalPage: Sendable {
    let payIns: PayInService

    private func ids(_ request: Request) -> (String, String) {
        (request.parameters["clientId"] ?? "", request.parameters["id"] ?? "")
    }

    func show(_ request: Request) async -> Response {
        let (clientId, id) = ids(request)
        let secret = (try? request.query())?["s"] ?? ""
        guard let payIn = try? await payIns.payPalApproval(clientId: clientId, id: id, secret: secret),
            let order = payIn.payPal
        else { return Self.page(.notFound, Self.invalidLink) }
        return Self.page(.ok, Self.approvalHTML(payIn, order: order, action: request.path, secret: secret))
    }

    func answer(_ request: Request) async -> Response {
        guard let form = try? request.formFields(), let secret = form["s"] else {
            return Self.page(.badRequest, Self.message("Answer not sent", "The form was incomplete. Please try again."))
        }
        let (clientId, id) = ids(request)
        do {
            let (_, target) = try await payIns.answerPayPalApproval(
                clientId: clientId, id: id, secret: secret, approved: form["action"] == "approve")
            var response = Response(status: HTTPStatus(303), body: [])
            response.headers.set("Location", target)
            response.headers.set("Cache-Control", "no-store")
            response.headers.set("Referrer-Policy", "no-referrer")
            return response
        } catch let error as PaymentsError where error.code == .notFound {
            return Self.page(.notFound, Self.invalidLink)
        } catch {
            return Self.page(
                .serviceUnavailable,
                Self.message("Answer not recorded", "Your answer could not be recorded. Try again."))
        }
    }

    private static let invalidLink = message(
        "PayPal link not valid", "This PayPal link is not valid. Return to the merchant and try again.")

    private static func page(_ status: HTTPStatus, _ html: String) -> Response {
        var response = Response(status: status, body: Array(html.utf8))
        for (name, value) in SandboxACSPage.pageHeaders { response.headers.set(name, value) }
        return response
    }

    static func approvalHTML(_ payIn: PayIn, order: PayPalOrder, action: String, secret: String) -> String {
        let text = SandboxACSStrings(.en)
        let buyer = [order.buyer.firstName, order.buyer.lastName].compactMap { $0 }.joined(separator: " ")
        let rows = order.lineItems.map { item in
            let line = Funds(currency: payIn.debitedFunds.currency, amount: item.unitAmount ?? 0)
            return "<tr><th scope=\"row\">\(HTMLText.escape(item.name ?? ""))</th>"
                + "<td>\(item.quantity ?? 0)</td><td>\(HTMLText.escape(text.amount(line)))</td></tr>"
        }
        let items =
            rows.isEmpty
            ? ""
            : "<table id=\"pp-items\"><caption>Your order</caption><thead><tr><th scope=\"col\">Item</th>"
                + "<th scope=\"col\">Quantity</th><th scope=\"col\">Unit price</th></tr></thead><tbody>"
                + rows.joined() + "</tbody></table>"
        let form = """
            <form method="post" action="\(HTMLText.escape(action))">\
            <input type="hidden" name="s" value="\(HTMLText.escape(secret))"><div class="actions">
            """
        let body: String
        if payIn.machine.state.isFinal {
            let outcome =
                payIn.machine.state == .succeeded ? "You approved this payment." : "This payment did not go through."
            body = """
                <h1>PayPal payment \(payIn.machine.state == .succeeded ? "approved" : "not completed")</h1>\
                <p id="pp-outcome">\(outcome)</p>\(form)<button class="primary" type="submit" name="action" \
                value="return">Return to the merchant</button></div></form>
                """
        } else {
            body = """
                <h1>Pay with PayPal</h1><p>Signed in as <strong id="pp-buyer">\(HTMLText.escape(buyer))</strong></p>\
                \(items)<dl><dt>Total</dt><dd class="amount" id="pp-total">\
                \(HTMLText.escape(text.amount(payIn.debitedFunds)))</dd></dl>\(form)\
                <button class="primary" id="pp-approve" type="submit" name="action" value="approve">Approve and pay\
                </button><button class="secondary" id="pp-cancel" type="submit" name="action" value="cancel">Cancel \
                and return to the merchant</button></div></form>\
                <p class="notice">CardVault sandbox: no PayPal account is charged.</p>
                """
        }
        return document(body)
    }

    private static func message(_ title: String, _ text: String) -> String {
        document("<h1>\(HTMLText.escape(title))</h1><p>\(HTMLText.escape(text))</p>")
    }

    private static func document(_ body: String) -> String {
        """
        <!DOCTYPE html><html lang="en"><head><meta charset="utf-8">\
        <meta name="viewport" content="width=device-width, initial-scale=1">\
        <title>PayPal · CardVault sandbox</title><style>\(SandboxACSPage.style)\
        table{width:100%;border-collapse:collapse;margin:0 0 1rem}caption{text-align:left;font-weight:600}\
        th,td{text-align:left;padding:.25rem;border-bottom:1px solid #d1d5db}</style></head>\
        <body><main id="paypal">\(body)</main></body></html>
        """
    }
}
