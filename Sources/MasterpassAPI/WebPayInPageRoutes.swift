import CardKit
import Checkout
import Foundation
public import HTTPServer
public import Payments
import VaultCore

/// The hosted payment page of web card pay-ins (`RedirectURL` of `POST /payins/card/web`):
/// `GET /payins/web/{clientId}/{id}?s=…` shows it, `POST …/pay` takes the card, `GET …/return?s=…` is where the
/// ACS page (or a cancel) comes back to; each ends at the merchant's `ReturnURL` with `transactionId`.
public struct WebPayInPageRoutes: RouteGroup {
    public let services: MerchantServices

    public init(services: MerchantServices) {
        self.services = services
    }

    public func register(on router: inout Router) {
        let handlers = WebPayInPageHandlers(webPayIns: WebPayInService(services: services))
        let limit = services.abuseLimits.hostedPages
        func page(_ method: HTTPMethod, _ path: String, _ handler: @escaping @Sendable (Request) async -> Response) {
            router.add(method, path) { request in
                await RateLimitGate.limited(
                    limit, request, refusal: { handlers.tooManyRequests(request, retryAfter: $0) }
                ) { await handler(request) }
            }
        }
        page(.get, "/payins/web/:clientId/:id") { await handlers.show($0) }
        page(.post, "/payins/web/:clientId/:id/pay") { await handlers.pay($0) }
        page(.get, "/payins/web/:clientId/:id/return") { await handlers.resume($0) }
        page(.post, "/payins/web/:clientId/:id/return") { await handlers.resume($0) }
    }
}

struct WebPayInPageHandlers: Sendable {
    let webPayIns: WebPayInService

    private func ids(_ request: Request) -> (String, String) {
        (request.parameters["clientId"] ?? "", request.parameters["id"] ?? "")
    }

    func show(_ request: Request) async -> Response {
        let (clientId, id) = ids(request)
        let secret = (try? request.query())?["s"] ?? ""
        do {
            let view = try await webPayIns.page(clientId: clientId, id: id, secret: secret)
            if view.payIn.isFinal || view.payIn.payInId != nil {
                return await resume(request)
            }
            return html(WebPayInPage.form(view, errors: [], values: .init(), secret: secret), .ok)
        } catch {
            return failed(error, request)
        }
    }

    func pay(_ request: Request) async -> Response {
        defer { request.wipeBody() }
        let (clientId, id) = ids(request)
        let fields: FormFields
        do {
            fields = try request.formFields()
            request.wipeBody()  // the card number now lives in `fields` only
        } catch {
            return html(WebPayInPage.message(title: .notFoundTitle, text: .notFoundText, locale: .enUS), 400)
        }
        let secret = fields["s"] ?? ""
        var device: [String: String] = [:]
        for name in CheckoutPage.deviceFields {
            if let value = fields[name], !value.isEmpty { device[name] = String(value.prefix(128)) }
        }
        let signals = DeviceSignals(
            ipAddress: request.remoteAddress.isEmpty ? nil : request.remoteAddress,
            userAgent: request.headers["User-Agent"].map { String($0.prefix(512)) },
            acceptLanguage: request.headers["Accept-Language"].map { String($0.prefix(256)) }, device: device)
        let browser = BrowserInfo(
            acceptHeader: String((request.headers["Accept"] ?? "text/html").prefix(256)),
            javaEnabled: device["javaEnabled"] == "true", javascriptEnabled: device["javascriptEnabled"] == "true",
            language: device["language"].map { String($0.prefix(8)) }
                ?? signals.acceptLanguage.map { String($0.prefix(5)) } ?? "en",
            colorDepth: device["colorDepth"].flatMap { Int($0) }.map { min(max($0, 1), 48) } ?? 24,
            screenHeight: device["screenHeight"].flatMap { Int($0) }.map { min(max($0, 0), 65_535) },
            screenWidth: device["screenWidth"].flatMap { Int($0) }.map { min(max($0, 0), 65_535) },
            timeZoneOffset: device["timeZoneOffset"].map { String($0.prefix(8)) } ?? "0",
            userAgent: signals.userAgent)
        let card = WebPayInCardInput(
            number: Redacted(fields["cardNumber"] ?? ""), expiry: fields["expiry"] ?? "",
            securityCode: Redacted(fields["securityCode"] ?? ""), holderName: fields["cardHolderName"] ?? "")
        do {
            let step = try await webPayIns.pay(
                clientId: clientId, id: id, secret: secret, card: card, signals: signals, browserInfo: browser)
            let values = WebPayInPage.Values(
                cardNumber: String((fields["cardNumber"] ?? "").filter { $0.isNumber || $0 == " " }.prefix(23)),
                expiry: String((fields["expiry"] ?? "").prefix(7)),
                cardHolderName: String((fields["cardHolderName"] ?? "").prefix(100)))
            return render(step, values: values, secret: secret)
        } catch {
            return failed(error, request)
        }
    }

    func resume(_ request: Request) async -> Response {
        let (clientId, id) = ids(request)
        let query = try? request.query()
        let secret = query?["s"] ?? ""
        do {
            if query?["cancel"] == "1" {
                return render(
                    try await webPayIns.cancel(clientId: clientId, id: id, secret: secret), values: .init(),
                    secret: secret)
            }
            return render(
                try await webPayIns.resume(clientId: clientId, id: id, secret: secret), values: .init(),
                secret: secret)
        } catch {
            return failed(error, request)
        }
    }

    func render(_ step: WebPayInStep, values: WebPayInPage.Values, secret: String) -> Response {
        switch step {
        case .redirect(let location):
            return Response(
                status: 303,
                headers: ["Location": location, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"])
        case .form(let view, let errors):
            return html(
                WebPayInPage.form(view, errors: errors, values: values, secret: secret), errors.isEmpty ? .ok : 422)
        }
    }

    func failed(_ error: any Error, _ request: Request) -> Response {
        if let error = error as? PaymentsError, error.code == .notFound {
            return html(WebPayInPage.message(title: .notFoundTitle, text: .notFoundText, locale: .enUS), 404)
        }
        request.logger.error(
            "web pay-in page failed", ["error": .string(String(describing: type(of: error)))])
        return html(
            CheckoutPage.error(
                locale: .enUS, reference: request.requestID, text: CheckoutStrings(.enUS)[.somethingWentWrong]), 503)
    }

    func tooManyRequests(_ request: Request, retryAfter seconds: Int) -> Response {
        html(
            CheckoutPage.error(
                locale: .enUS, reference: request.requestID,
                text: "Too many requests came from your network. Wait \(seconds) seconds and try again."),
            .tooManyRequests)
    }

    func html(_ page: String, _ status: HTTPStatus) -> Response {
        Response(
            status: status,
            headers: [
                "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer",
                "Content-Security-Policy":
                    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                    + "base-uri 'none'; frame-ancestors 'none'",
            ],
            body: Array(page.utf8))
    }
}
