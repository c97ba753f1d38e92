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
        let payInRequest = body.payInRequest()
        try body.check()
        let payIn = try await services.payIns.create(clientId: clientId, request: payInRequest)
        return MangopayResponse.json(MangopayWire.payIn(payIn, redirectURL: services.payIns.challengeURL(for: payIn)))
    }

    func get(_ request: Request, clientId: String) async throws -> Response {
        if id(request).hasPrefix("wpayin_") {
            let webPayIns = WebPayInService(services: services)
            let payIn = try await webPayIns.get(clientId: clientId, id: id(request))
            return MangopayResponse.json(MangopayWire.webPayIn(payIn, redirectURL: webPayIns.pageURL(for: payIn)))
        }
        let payIn = try await services.payIns.get(clientId: clientId, id: id(request))
        return MangopayResponse.json(MangopayWire.payIn(payIn, redirectURL: services.payIns.challengeURL(for: payIn)))
    }

    func refund(_ request: Request, clientId: String) async throws -> Response {
        // An empty body asks for a full refund.
        var refund = RefundRequest()
        if !request.body.isEmpty {
            var body = try MangopayFields(body: request.body)
            refund = body.refundRequest()
            try body.check()
        }
        let made = try await services.payIns.refund(clientId: clientId, payInId: id(request), request: refund)
        return MangopayResponse.json(MangopayWire.refund(made))
    }

    func refunds(_ request: Request, clientId: String) async throws -> Response {
        let page = try page(request)
        var payInId = id(request)
        if payInId.hasPrefix("wpayin_") {
            // A web pay-in's refunds are those of the card pay-in made on its page; none before it is paid.
            let webPayIn = try await WebPayInService(services: services).get(clientId: clientId, id: payInId)
            guard let linked = webPayIn.payInId else {
                return MangopayResponse.list(Page<Refund>(items: [], totalItems: 0, totalPages: 0)) {
                    MangopayWire.refund($0)
                }
            }
            payInId = linked
        }
        return MangopayResponse.list(
            try await services.payIns.refunds(clientId: clientId, payInId: payInId, page: page),
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
        var validation = body.cardValidationRequest()
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
}
