import HTTPServer
import Payments

/// Reads pay-in, refund and validation requests into the Payments types and renders the answers. No
/// business rules live here.
struct PayInHandlers: Sendable {
    let services: MerchantServices

    private func id(_ request: Request, _ name: String = "id") -> String { request.parameters[name] ?? "" }

    private func page(_ request: Request) throws -> PageRequest { try PageRequest(request) }

    func create(_ request: Request, clientId: String) async throws -> Response {
        var body = try MangopayFields(body: request.body)
        let payInRequest = Self.payInRequest(&body)
        try body.check()
        let payIn = try await services.payIns.create(clientId: clientId, request: payInRequest)
        return MangopayResponse.json(MangopayWire.payIn(payIn, redirectURL: services.payIns.challengeURL(for: payIn)))
    }

    func get(_ request: Request, clientId: String) async throws -> Response {
        let payIn = try await services.payIns.get(clientId: clientId, id: id(request))
        return MangopayResponse.json(MangopayWire.payIn(payIn, redirectURL: services.payIns.challengeURL(for: payIn)))
    }

    func refund(_ request: Request, clientId: String) async throws -> Response {
        // An empty body asks for a full refund.
        var refund = RefundRequest()
        if !request.body.isEmpty {
            var body = try MangopayFields(body: request.body)
            refund.authorId = body.string("AuthorId")
            refund.debitedFunds = Self.funds(&body, "DebitedFunds")
            refund.fees = Self.funds(&body, "Fees")
            refund.tag = body.string("Tag")
            try body.check()
        }
        let made = try await services.payIns.refund(clientId: clientId, payInId: id(request), request: refund)
        return MangopayResponse.json(MangopayWire.refund(made))
    }

    func refunds(_ request: Request, clientId: String) async throws -> Response {
        let page = try page(request)
        return MangopayResponse.list(
            try await services.payIns.refunds(clientId: clientId, payInId: id(request), page: page),
            render: MangopayWire.refund)
    }

    func cardTransactions(_ request: Request, clientId: String) async throws -> Response {
        let page = try page(request)
        let payIns = services.payIns
        return MangopayResponse.list(
            try await payIns.transactions(clientId: clientId, cardId: id(request), page: page)
        ) { MangopayWire.payIn($0, redirectURL: payIns.challengeURL(for: $0)) }
    }

    func createValidation(_ request: Request, clientId: String) async throws -> Response {
        var body = try MangopayFields(body: request.body)
        var validation = Self.payInRequest(&body)
        try body.check()
        validation.cardId = id(request)
        let made = try await services.payIns.create(clientId: clientId, request: validation, purpose: .cardValidation)
        return MangopayResponse.json(
            MangopayWire.cardValidation(made, redirectURL: services.payIns.challengeURL(for: made)))
    }

    func getValidation(_ request: Request, clientId: String) async throws -> Response {
        let validation = try await services.payIns.get(
            clientId: clientId, id: id(request, "validationId"), purpose: .cardValidation)
        guard validation.cardId == id(request) else {
            throw PaymentsError.notFound("CardValidation", id: id(request, "validationId"))
        }
        return MangopayResponse.json(
            MangopayWire.cardValidation(validation, redirectURL: services.payIns.challengeURL(for: validation)))
    }

    // MARK: Reading bodies

    static func payInRequest(_ body: inout MangopayFields) -> PayInRequest {
        var request = PayInRequest()
        request.authorId = body.string("AuthorId")
        request.creditedUserId = body.string("CreditedUserId")
        request.creditedWalletId = body.string("CreditedWalletId")
        request.debitedFunds = funds(&body, "DebitedFunds")
        request.fees = funds(&body, "Fees")
        request.cardId = body.string("CardId")
        request.secureModeReturnURL = body.string("SecureModeReturnURL")
        request.secureMode = body.string("SecureMode")
        request.ipAddress = body.string("IpAddress")
        request.browserInfo = browserInfo(&body)
        request.statementDescriptor = body.string("StatementDescriptor")
        request.tag = body.string("Tag")
        request.billing = party(&body, "Billing")
        request.shipping = party(&body, "Shipping")
        request.culture = body.string("Culture")
        request.profilingAttemptReference = body.string("ProfilingAttemptReference")
        request.preferredCardNetwork = body.string("PreferredCardNetwork")
        request.paymentCategory = body.string("PaymentCategory")
        return request
    }

    static func funds(_ body: inout MangopayFields, _ key: String) -> Funds? {
        guard var nested = body.nested(key) else { return nil }
        let currency = nested.string("Currency", path: key + ".Currency")
        let amount = nested.integer("Amount", path: key + ".Amount")
        body.merge(nested)
        guard let currency, let amount else {
            body.fail(key, "The \(key) must have a Currency and an integer Amount.")
            return nil
        }
        return Funds(currency: currency, amount: amount)
    }

    static func browserInfo(_ body: inout MangopayFields) -> BrowserInfo? {
        guard var nested = body.nested("BrowserInfo") else { return nil }
        let path = "BrowserInfo."
        var info = BrowserInfo(
            acceptHeader: nested.string("AcceptHeader", path: path + "AcceptHeader"),
            javaEnabled: nested.boolean("JavaEnabled", path: path + "JavaEnabled"),
            javascriptEnabled: nested.boolean("JavascriptEnabled", path: path + "JavascriptEnabled"),
            language: nested.string("Language", path: path + "Language"),
            colorDepth: nested.integer("ColorDepth", path: path + "ColorDepth").map { Int(clamping: $0) },
            screenHeight: nested.integer("ScreenHeight", path: path + "ScreenHeight").map { Int(clamping: $0) },
            screenWidth: nested.integer("ScreenWidth", path: path + "ScreenWidth").map { Int(clamping: $0) },
            timeZoneOffset: nil,
            userAgent: nested.string("UserAgent", path: path + "UserAgent"))
        // The docs send 60, the SDK tests "+60": accept both.
        switch nested.object["TimeZoneOffset"] {
        case .int(let minutes)?: info.timeZoneOffset = String(minutes)
        case .string(let text)?: info.timeZoneOffset = String(text.prefix(8))
        case nil, .null?: break
        default: nested.fail(path + "TimeZoneOffset", "The TimeZoneOffset must be a number of minutes.")
        }
        body.merge(nested)
        return info
    }

    static func party(_ body: inout MangopayFields, _ key: String) -> PartyAddress? {
        guard var nested = body.nested(key) else { return nil }
        let party = PartyAddress(
            firstName: nested.string("FirstName"),
            lastName: nested.string("LastName"),
            address: nested.address("Address"))
        body.merge(nested, prefix: key + ".")
        return party
    }
}
