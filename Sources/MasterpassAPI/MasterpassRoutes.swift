import CardKit
public import Checkout
import Foundation
public import HTTPServer
public import VaultCore

/// The Masterpass / Secure Remote Commerce dialect: the hosted checkout pages under `/srci/` and the merchant
/// backend calls under `/masterpass/` (payment data, postback, pairing, precheckout, express checkout, payment
/// method, checkout registrations). Backend calls take the bearer token of the Mangopay dialect's OAuth endpoint;
/// errors come in Mastercard's `{"Errors":{"Error":[…]}}` shape; page errors as HTML pages.
public struct MasterpassRoutes: RouteGroup {
    public let checkout: CheckoutService
    /// The client owning a bearer token, or nil.
    public let bearerOwner: @Sendable (String) async throws -> String?

    /// Limits the hosted checkout pages per client address (the merchant API's `AbuseLimits.hostedPages` in the daemon).
    public let pageLimit: AddressRateLimiter

    public init(
        checkout: CheckoutService, pageLimit: AddressRateLimiter,
        bearerOwner: @escaping @Sendable (String) async throws -> String?
    ) {
        self.checkout = checkout
        self.pageLimit = pageLimit
        self.bearerOwner = bearerOwner
    }

    public func register(on router: inout Router) {
        let pages = CheckoutPageHandlers(checkout: checkout)
        let pageLimit = self.pageLimit
        // Every page request counts against the address (assets do not: they are static and cached).
        func page(_ method: HTTPMethod, _ path: String, _ handler: @escaping @Sendable (Request) async -> Response) {
            router.add(method, path) { request in
                await RateLimitGate.limited(
                    pageLimit, request, refusal: { pages.tooManyRequests(request, retryAfter: $0) }
                ) { await handler(request) }
            }
        }
        page(.get, "/srci") { await pages.open($0) }
        page(.get, "/srci/:sessionId") { await pages.show($0) }
        page(.post, "/srci/:sessionId/submit") { await pages.submit($0) }
        page(.post, "/srci/:sessionId/cancel") { await pages.cancel($0) }
        page(.get, "/srci/:sessionId/return") { await pages.resume($0) }
        page(.post, "/srci/:sessionId/return") { await pages.resume($0) }
        router.addImmediate(.get, "/srci/assets/checkout.js") { _ in
            Self.asset(CheckoutAssets.script, type: "text/javascript; charset=utf-8")
        }
        router.addImmediate(.get, "/srci/assets/checkout.css") { _ in
            Self.asset(CheckoutAssets.styleSheet, type: "text/css; charset=utf-8")
        }
        router.addImmediate(.get, "/srci/assets/click-to-pay.svg") { _ in
            Self.asset(CheckoutAssets.clickToPayLogo, type: "image/svg+xml")
        }

        let api = MasterpassHandlers(checkout: checkout, bearerOwner: bearerOwner)
        router.get("/masterpass/paymentdata/:transactionId") { request in
            await api.authorized(request) { try await api.paymentData(request, clientId: $0) }
        }
        router.get("/masterpass/paymentdata/:transactionId/accesses") { request in
            await api.authorized(request) { try await api.accesses(request, clientId: $0) }
        }
        router.post("/masterpass/postback") { request in
            await api.authorized(request) { try await api.postback(request, clientId: $0) }
        }
        router.get("/masterpass/pairingid") { request in
            await api.authorized(request) { try await api.pairingId(request, clientId: $0) }
        }
        router.get("/masterpass/precheckoutdata/:pairingId") { request in
            await api.authorized(request) { try await api.preCheckoutData(request, clientId: $0) }
        }
        router.post("/masterpass/expresscheckout") { request in
            await api.authorized(request) { try await api.expressCheckout(request, clientId: $0) }
        }
        router.get("/masterpass/paymentmethod") { _ in
            (try? Response.json(checkout.paymentMethod())) ?? Response(status: 500)
        }
        router.post("/masterpass/checkouts") { request in
            await api.authorized(request) { try await api.register(request, clientId: $0) }
        }
        router.post("/masterpass/checkouts/:checkoutId/sessions") { request in
            await api.authorized(request) { try await api.startSession(request, clientId: $0) }
        }
        router.get("/masterpass/checkouts") { request in
            await api.authorized(request) { try await api.registrations(request, clientId: $0) }
        }
        router.delete("/masterpass/checkouts/:checkoutId") { request in
            await api.authorized(request) { try await api.unregister(request, clientId: $0) }
        }
    }

    static func asset(_ text: String, type: String) -> Response {
        Response(
            status: .ok,
            headers: [
                "Content-Type": type, "Cache-Control": "public, max-age=300", "X-Content-Type-Options": "nosniff",
            ],
            body: Array(text.utf8))
    }
}

/// The hosted pages: open, show, submit, return from the challenge, cancel.
struct CheckoutPageHandlers: Sendable {
    let checkout: CheckoutService

    /// `GET /srci/?checkoutId=…`: validates the checkout URL, opens a session and sends the browser to its page.
    func open(_ request: Request) async -> Response {
        let items: [(String, String)]
        do {
            items = try request.query().pairs.map { ($0.name, $0.value) }
        } catch {
            return refused(CheckoutError.invalid("query", "the query string is malformed"), request, locale: .enUS, 400)
        }
        let locale = items.first { $0.0 == "locale" }.flatMap { CheckoutLocale(parsing: $0.1) } ?? .enUS
        do {
            let session = try await checkout.open(queryItems: items)
            // A locale other than the one the merchant chose rides along in the page URL (nothing is stored).
            let chosen = items.first { $0.0 == "locale" }.flatMap { CheckoutLocale(parsing: $0.1) }
                .flatMap { $0 == session.request.locale ? nil : $0 }
            return redirect("/srci/" + session.sessionId + (chosen.map { "?locale=" + $0.rawValue } ?? ""))
        } catch let error as CheckoutError where error.code == .notFound {
            return html(CheckoutPage.notFound(locale: locale), 404)
        } catch let error as CheckoutError {
            if wantsJSON(request) {
                request.logger.info("checkout refused", ["code": .string(error.code.rawValue)])
                return MasterpassErrorResponse(error).makeResponse()
            }
            return refused(error, request, locale: locale, MasterpassErrorResponse.mapping(error.code).0)
        } catch {
            return unexpected(error, request, locale: locale)
        }
    }

    /// `GET /srci/{sessionId}`: the page for the session's state.
    func show(_ request: Request) async -> Response {
        do {
            guard let session = try await checkout.session(id: request.parameters["sessionId"] ?? "") else {
                return html(CheckoutPage.notFound(locale: .enUS), 404)
            }
            return render(checkout.step(for: session), values: CheckoutFormValues(), locale: Self.locale(request))
        } catch {
            return unexpected(error, request, locale: .enUS)
        }
    }

    /// `POST /srci/{sessionId}/submit`: the card form.
    func submit(_ request: Request) async -> Response {
        defer { request.wipeBody() }  // also when the form did not parse
        let fields: FormFields
        do {
            fields = try request.formFields()
            request.wipeBody()  // the card number now lives in `fields` only
        } catch {
            return refused(CheckoutError.invalid("form", "the form data is malformed"), request, locale: .enUS, 400)
        }
        let form = Self.form(fields)
        var device: [String: String] = [:]
        for name in CheckoutPage.deviceFields {
            if let value = fields[name], !value.isEmpty { device[name] = String(value.prefix(128)) }
        }
        let signals = CheckoutDeviceSignals(
            ipAddress: request.remoteAddress.isEmpty ? nil : request.remoteAddress,
            userAgent: request.headers["User-Agent"].map { String($0.prefix(512)) },
            acceptLanguage: request.headers["Accept-Language"].map { String($0.prefix(256)) }, device: device)
        do {
            let step = try await checkout.submit(
                sessionId: request.parameters["sessionId"] ?? "", form: form, signals: signals)
            return render(step, values: Self.values(fields), locale: Self.locale(request))
        } catch let error as CheckoutError where error.code == .notFound {
            return html(CheckoutPage.notFound(locale: .enUS), 404)
        } catch {
            return unexpected(error, request, locale: .enUS)
        }
    }

    /// `GET|POST /srci/{sessionId}/return`: back from the challenge page.
    func resume(_ request: Request) async -> Response {
        do {
            return render(try await checkout.resume(sessionId: request.parameters["sessionId"] ?? ""), values: .init())
        } catch let error as CheckoutError where error.code == .notFound {
            return html(CheckoutPage.notFound(locale: .enUS), 404)
        } catch {
            return unexpected(error, request, locale: .enUS)
        }
    }

    /// `POST /srci/{sessionId}/cancel`.
    func cancel(_ request: Request) async -> Response {
        do {
            return render(try await checkout.cancel(sessionId: request.parameters["sessionId"] ?? ""), values: .init())
        } catch let error as CheckoutError where error.code == .notFound {
            return html(CheckoutPage.notFound(locale: .enUS), 404)
        } catch {
            return unexpected(error, request, locale: .enUS)
        }
    }

    /// The `?locale=` a checkout URL chose for its pages (display only; nil when absent or malformed).
    static func locale(_ request: Request) -> CheckoutLocale? {
        (try? request.query())?["locale"].flatMap { CheckoutLocale(parsing: $0) }
    }

    func render(_ step: CheckoutStep, values: CheckoutFormValues, locale: CheckoutLocale? = nil) -> Response {
        var step = step
        if let locale, case .form(var session, let errors) = step {
            session.request.locale = locale
            step = .form(session, fieldErrors: errors)
        }
        switch step {
        case .form(let session, let errors):
            let status: HTTPStatus = errors.isEmpty && session.problem == nil ? .ok : 422
            var kept = values
            // The card number goes back into its field only when the server found it valid.
            if errors.contains(where: { $0.field == "cardNumber" }) { kept.cardNumber = "" }
            return html(CheckoutPage.form(session: session, fieldErrors: errors, values: kept), status)
        case .redirect(let location):
            return redirect(location)
        case .waiting(let session):
            return html(CheckoutPage.waiting(session: session), .ok)
        case .expired(let session):
            return html(CheckoutPage.expired(locale: session.request.locale), 410)
        }
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

    func redirect(_ location: String) -> Response {
        Response(status: 303, headers: ["Location": location, "Cache-Control": "no-store"])
    }

    /// The 429 of the hosted pages: Masterpass JSON when asked for, else the error page.
    func tooManyRequests(_ request: Request, retryAfter seconds: Int) -> Response {
        let message = "Too many requests from your network; wait \(seconds) seconds and try again"
        if wantsJSON(request) {
            return MasterpassErrorResponse(
                status: .tooManyRequests,
                errors: [
                    .init(
                        Source: "CardVault", ReasonCode: "TOO_MANY_REQUESTS", Description: message, Recoverable: true,
                        Details: "")
                ]
            ).makeResponse()
        }
        return html(
            CheckoutPage.error(
                locale: .enUS, reference: request.requestID,
                text: "Too many requests came from your network. Wait \(seconds) seconds and try again."),
            .tooManyRequests)
    }

    func wantsJSON(_ request: Request) -> Bool {
        (request.headers["Accept"] ?? "").contains("application/json")
    }

    func unexpected(_ error: any Error, _ request: Request, locale: CheckoutLocale) -> Response {
        if let error = error as? CheckoutError {
            return refused(error, request, locale: locale, MasterpassErrorResponse.mapping(error.code).0)
        }
        request.logger.error("checkout page failed", ["error": .string(String(describing: type(of: error)))])
        return html(
            CheckoutPage.error(
                locale: locale, reference: request.requestID, text: CheckoutStrings(locale)[.somethingWentWrong]),
            500)
    }

    /// The shopper-safe page for a refused checkout request; the developer detail (each field and why) goes to
    /// the log under the request id the page shows.
    func refused(_ error: CheckoutError, _ request: Request, locale: CheckoutLocale, _ status: HTTPStatus) -> Response {
        var detail: [String: LogValue] = ["code": .string(error.code.rawValue)]
        let fields =
            error.fieldErrors.isEmpty ? [CheckoutFieldError(field: "", message: error.message)] : error.fieldErrors
        detail["fields"] = .string(
            fields.map { $0.field.isEmpty ? $0.message : $0.field + ": " + $0.message }
                .joined(separator: "; "))
        request.logger.info("checkout refused", detail)
        return html(CheckoutPage.error(locale: locale, reference: request.requestID), status)
    }

    static func form(_ fields: FormFields) -> CheckoutForm {
        func address(_ prefix: String) -> CheckoutAddressForm {
            CheckoutAddressForm(
                line1: fields[prefix + "Line1"], line2: fields[prefix + "Line2"], city: fields[prefix + "City"],
                postalCode: fields[prefix + "PostalCode"], subdivision: fields[prefix + "Subdivision"],
                country: fields[prefix + "Country"])
        }
        return CheckoutForm(
            cardNumber: fields["cardNumber"].map(Redacted.init), expiry: fields["expiry"],
            securityCode: fields["securityCode"].map(Redacted.init), cardHolderName: fields["cardHolderName"],
            savedCardId: fields["savedCardId"], billing: address("billing"), shipping: address("shipping"),
            shippingSameAsBilling: fields["shippingSameAsBilling"] == "true", email: fields["email"],
            phone: fields["phone"], pairingConsent: fields["pairingConsent"] == "true")
    }

    static func values(_ fields: FormFields) -> CheckoutFormValues {
        let form = form(fields)
        return CheckoutFormValues(
            cardHolderName: form.cardHolderName ?? "", expiry: form.expiry ?? "", billing: form.billing,
            shipping: form.shipping, shippingSameAsBilling: form.shippingSameAsBilling, email: form.email ?? "",
            phone: form.phone ?? "", pairingConsent: form.pairingConsent, savedCardId: form.savedCardId ?? "",
            cardNumber: String((fields["cardNumber"] ?? "").filter { $0.isNumber || $0 == " " }.prefix(23)))
    }
}

/// The merchant backend calls.
struct MasterpassHandlers: Sendable {
    let checkout: CheckoutService
    let bearerOwner: @Sendable (String) async throws -> String?

    func authorized(_ request: Request, _ body: (String) async throws -> Response) async -> Response {
        guard let header = request.headers["Authorization"],
            let token = AuthorizationHeader.credentials(header, scheme: "Bearer")
        else { return MasterpassErrorResponse.authenticationFailed.makeResponse() }
        do {
            guard let clientId = try await bearerOwner(token) else {
                return MasterpassErrorResponse.authenticationFailed.makeResponse()
            }
            return try await body(clientId)
        } catch let error as CheckoutError {
            if error.code == .authorizationFailed || error.code == .notFound {
                request.logger.notice("masterpass call refused", ["code": .string(error.code.rawValue)])
            }
            return MasterpassErrorResponse(error).makeResponse()
        } catch let error as MasterpassErrorResponse {
            return error.makeResponse()
        } catch {
            request.logger.error("masterpass call failed", ["error": .string(String(describing: type(of: error)))])
            return MasterpassErrorResponse(
                status: 500,
                errors: [
                    .init(
                        Source: "CardVault", ReasonCode: "SYSTEM_ERROR", Description: "Unexpected error; retry later",
                        Recoverable: true, Details: request.requestID)
                ]
            ).makeResponse()
        }
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    func json(_ value: some Encodable, status: HTTPStatus = .ok) throws -> Response {
        try Response.json(value, status: status, encoder: Self.encoder)
    }

    func paymentData(_ request: Request, clientId: String) async throws -> Response {
        let query = try queryFields(request)
        let data = try await checkout.paymentData(
            clientId: clientId, transactionId: request.parameters["transactionId"], checkoutId: query["checkoutId"],
            cartId: query["cartId"])
        var response = try json(data)
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    func accesses(_ request: Request, clientId: String) async throws -> Response {
        let id = request.parameters["transactionId"] ?? ""
        return try json(["accesses": try await checkout.paymentDataAccesses(clientId: clientId, transactionId: id)])
    }

    func postback(_ request: Request, clientId: String) async throws -> Response {
        let body = try jsonObject(request)
        let query = try queryFields(request)
        let input = MasterpassPostbackInput(
            transactionId: try string(body, "transactionId"),
            checkoutId: try string(body, "checkoutId") ?? query["checkoutId"], currency: try string(body, "currency"),
            amount: try decimal(body, "amount"), paymentSuccessful: try bool(body, "paymentSuccessful"),
            paymentCode: try string(body, "paymentCode"), paymentDate: try string(body, "paymentDate"),
            preCheckoutTransactionId: try string(body, "preCheckoutTransactionId"))
        try await checkout.postback(clientId: clientId, input)
        return Response(status: 204)
    }

    func pairingId(_ request: Request, clientId: String) async throws -> Response {
        let query = try queryFields(request)
        let id = try await checkout.pairingId(
            clientId: clientId, pairingTransactionId: query["pairingTransactionId"], userId: query["userId"])
        return try json(["pairingId": id])
    }

    func preCheckoutData(_ request: Request, clientId: String) async throws -> Response {
        try json(try await checkout.preCheckoutData(clientId: clientId, pairingId: request.parameters["pairingId"]))
    }

    func expressCheckout(_ request: Request, clientId: String) async throws -> Response {
        let body = try jsonObject(request)
        let input = MasterpassExpressCheckoutInput(
            checkoutId: try string(body, "checkoutId"), pairingId: try string(body, "pairingId"),
            preCheckoutTransactionId: try string(body, "preCheckoutTransactionId"), amount: try decimal(body, "amount"),
            currency: try string(body, "currency"), cardId: try string(body, "cardId"),
            shippingAddressId: try string(body, "shippingAddressId"), digitalGoods: try bool(body, "digitalGoods"),
            unpredictableNumber: try string(body, "unpredictableNumber"),
            validityPeriodMinutes: try decimal(body, "validityPeriodMinutes"))
        var response = try json(try await checkout.expressCheckout(clientId: clientId, input))
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    func register(_ request: Request, clientId: String) async throws -> Response {
        let body = try jsonObject(request)
        let registration = try await checkout.register(
            clientId: clientId, checkoutId: try string(body, "checkoutId"),
            callbackPrefixes: try strings(body, "callbackUrlPrefixes"),
            allowedCardTypes: try strings(body, "allowedCardTypes"), merchantName: try string(body, "merchantName"),
            threeDSPolicy: try string(body, "threeDSPolicy"), cvcPolicy: try string(body, "cvcPolicy"),
            addressFields: try string(body, "addressFields"))
        return try json(MasterpassRegistrationView(registration), status: 201)
    }

    func registrations(_ request: Request, clientId: String) async throws -> Response {
        try json([
            "checkouts": try await checkout.registrations(clientId: clientId).map(MasterpassRegistrationView.init)
        ])
    }

    func unregister(_ request: Request, clientId: String) async throws -> Response {
        try await checkout.unregister(clientId: clientId, checkoutId: request.parameters["checkoutId"] ?? "")
        return Response(status: 204)
    }

    // MARK: - Reading JSON bodies without losing precision

    func queryFields(_ request: Request) throws -> FormFields {
        do {
            return try request.query()
        } catch {
            throw CheckoutError.invalid("query", "the query string is malformed")
        }
    }

    func jsonObject(_ request: Request) throws -> [String: Any] {
        guard !request.body.isEmpty else { throw CheckoutError.invalid("body", "a JSON object body is required") }
        guard let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] else {
            throw CheckoutError.invalid("body", "the body must be a JSON object")
        }
        return object
    }

    func string(_ body: [String: Any], _ name: String) throws -> String? {
        guard let value = body[name], !(value is NSNull) else { return nil }
        guard let text = value as? String else { throw CheckoutError.invalid(name, "\(name) must be a string") }
        return text
    }

    func strings(_ body: [String: Any], _ name: String) throws -> [String] {
        guard let value = body[name], !(value is NSNull) else { return [] }
        if let single = value as? String { return [single] }
        guard let list = value as? [String] else {
            throw CheckoutError.invalid(name, "\(name) must be an array of strings")
        }
        return list
    }

    func bool(_ body: [String: Any], _ name: String) throws -> Bool? {
        guard let value = body[name], !(value is NSNull) else { return nil }
        if Self.isJSONBoolean(value), let number = value as? NSNumber { return number.boolValue }
        if let text = value as? String, text == "true" || text == "false" { return text == "true" }
        throw CheckoutError.invalid(name, "\(name) must be true or false")
    }

    /// True for a JSON `true`/`false` from JSONSerialization (a boolean NSNumber, not the number 1 or 0).
    static func isJSONBoolean(_ value: Any) -> Bool {
        type(of: value) == Bool.self || String(describing: type(of: value)) == "__NSCFBoolean"
    }

    /// A decimal amount sent as a string (`"12.55"`) or a JSON number (`12.55`), as text for strict parsing.
    func decimal(_ body: [String: Any], _ name: String) throws -> String? {
        guard let value = body[name], !(value is NSNull) else { return nil }
        if let text = value as? String { return text }
        if !Self.isJSONBoolean(value), let number = value as? NSNumber {
            return NSDecimalNumber(decimal: number.decimalValue).stringValue
        }
        throw CheckoutError.invalid(name, "\(name) must be a decimal number such as 12.55")
    }
}

/// A checkout registration as the API shows it.
struct MasterpassRegistrationView: Encodable {
    var checkoutId: String
    var callbackUrlPrefixes: [String]
    var allowedCardTypes: [String]
    var merchantName: String
    var creationDate: Int64
    var threeDSPolicy: String
    var cvcPolicy: String
    var addressFields: String

    init(_ registration: CheckoutRegistration) {
        addressFields = (registration.addressFields ?? .full).rawValue
        checkoutId = registration.checkoutId
        callbackUrlPrefixes = registration.callbackPrefixes.map(\.description)
        allowedCardTypes = registration.allowedCardTypes.map(\.rawValue).sorted()
        merchantName = registration.merchantName
        creationDate = registration.creationDate
        threeDSPolicy = (registration.threeDSPolicy ?? .merchantChoice).rawValue
        cvcPolicy = (registration.cvcPolicy ?? .merchantChoice).rawValue
    }
}
