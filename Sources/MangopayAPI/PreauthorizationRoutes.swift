public import HTTPServer
public import Payments

/// Preauthorizations, deposit preauthorizations and their captures in the Mangopay dialect. Their 3-D Secure
/// redirects lead to the sandbox ACS page of ``PayInRoutes``.
public struct PreauthorizationRoutes: RouteGroup {
    public let services: MerchantServices

    public init(services: MerchantServices) {
        self.services = services
    }

    public func register(on router: inout Router) {
        let api = MangopayHandlers(services: services, checkoutOrigins: [])
        let handlers = PreauthorizationHandlers(services: services)
        let base = "/v2.01/:clientId"
        for (resource, kind) in [
            ("/preauthorizations", PreauthorizationStateMachine.Kind.preauthorization),
            ("/deposit-preauthorizations", .deposit),
        ] {
            let path = base + resource
            router.post(path + "/card/direct") { request in
                await api.authorized(request, idempotent: true) { clientId in
                    try await handlers.create(request, clientId: clientId, kind: kind)
                }
            }
            router.get(path + "/:id") { request in
                await api.authorized(request) { clientId in
                    try await handlers.get(request, clientId: clientId, kind: kind)
                }
            }
            router.put(path + "/:id") { request in
                await api.authorized(request) { clientId in
                    try await handlers.update(request, clientId: clientId, kind: kind)
                }
            }
            router.get(path + "/:id/transactions") { request in
                await api.authorized(request) { clientId in
                    try await handlers.transactions(request, clientId: clientId, kind: kind)
                }
            }
            for owner in ["/cards/:id", "/users/:id"] {
                router.get(base + owner + resource) { request in
                    await api.authorized(request) { clientId in
                        try await handlers.list(request, clientId: clientId, kind: kind, byCard: owner == "/cards/:id")
                    }
                }
            }
        }
        // The SDK's deposit URLs put a slash before the id (`/deposit-preauthorizations//{id}`); the one after the
        // lists is the router's (one trailing slash is ignored everywhere).
        let depositPath = base + "/deposit-preauthorizations//:id"
        router.get(depositPath) { request in
            await api.authorized(request) { clientId in
                try await handlers.get(request, clientId: clientId, kind: .deposit)
            }
        }
        router.put(depositPath) { request in
            await api.authorized(request) { clientId in
                try await handlers.update(request, clientId: clientId, kind: .deposit)
            }
        }
        router.post(base + "/payins/PreAuthorized/direct") { request in
            await api.authorized(request, idempotent: true) { clientId in
                try await handlers.capture(request, clientId: clientId, kind: .preauthorization)
            }
        }
        for (path, step) in [
            ("/full-capture", PreauthorizationStateMachine.CaptureStep.capture),
            ("/capture-with-complement", .priorToComplement), ("/complement", .complement),
        ] {
            router.post(base + "/payins/deposit-preauthorized/direct" + path) { request in
                await api.authorized(request, idempotent: true) { clientId in
                    try await handlers.capture(request, clientId: clientId, kind: .deposit, step: step)
                }
            }
        }
    }
}

/// Reads preauthorization requests into the Payments types and renders the answers. No business rules live here.
struct PreauthorizationHandlers: Sendable {
    let services: MerchantServices

    private func id(_ request: Request) -> String { request.parameters["id"] ?? "" }

    private func render(_ payIn: PayIn) -> MangopayJSON {
        MangopayWire.hold(payIn, redirectURL: services.payIns.challengeURL(for: payIn))
    }

    func create(
        _ request: Request, clientId: String, kind: PreauthorizationStateMachine.Kind
    ) async throws
        -> Response
    {
        var body = try MangopayFields(body: request.body)
        let made = body.payInRequest()
        try body.check()
        return MangopayResponse.json(
            render(try await services.preauthorizations.create(clientId: clientId, request: made, kind: kind)))
    }

    func get(_ request: Request, clientId: String, kind: PreauthorizationStateMachine.Kind) async throws -> Response {
        MangopayResponse.json(
            render(try await services.preauthorizations.get(clientId: clientId, id: id(request), kind: kind)))
    }

    /// `PUT` with `PaymentStatus: CANCELED`: the one change a merchant can make.
    func update(
        _ request: Request, clientId: String, kind: PreauthorizationStateMachine.Kind
    ) async throws
        -> Response
    {
        var body = try MangopayFields(body: request.body)
        let status = body.string("PaymentStatus")
        try body.check()
        guard status == "CANCELED" else {
            throw PaymentsError.invalid("PaymentStatus", "The PaymentStatus can only be set to CANCELED.")
        }
        return MangopayResponse.json(
            render(try await services.preauthorizations.cancel(clientId: clientId, id: id(request), kind: kind)))
    }

    func transactions(
        _ request: Request, clientId: String, kind: PreauthorizationStateMachine.Kind
    ) async throws
        -> Response
    {
        let page = try PageRequest(request)
        let payIns = services.payIns
        return MangopayResponse.list(
            try await services.preauthorizations.transactions(
                clientId: clientId, id: id(request), kind: kind, page: page)
        ) { MangopayWire.payIn($0, redirectURL: payIns.challengeURL(for: $0)) }
    }

    func list(
        _ request: Request, clientId: String, kind: PreauthorizationStateMachine.Kind, byCard: Bool
    )
        async throws -> Response
    {
        let page = try PageRequest(request)
        let service = services.preauthorizations
        let found =
            byCard
            ? try await service.list(clientId: clientId, cardId: id(request), kind: kind, page: page)
            : try await service.list(clientId: clientId, userId: id(request), kind: kind, page: page)
        return MangopayResponse.list(found, render: render)
    }

    func capture(
        _ request: Request, clientId: String, kind: PreauthorizationStateMachine.Kind,
        step: PreauthorizationStateMachine.CaptureStep = .capture
    ) async throws
        -> Response
    {
        var body = try MangopayFields(body: request.body)
        var capture = CaptureRequest()
        capture.authorId = body.string("AuthorId")
        capture.creditedUserId = body.string("CreditedUserId")
        capture.creditedWalletId = body.string("CreditedWalletId")
        capture.holdId = body.string(kind == .preauthorization ? "PreauthorizationId" : "DepositId")
        capture.debitedFunds = body.money("DebitedFunds")
        capture.fees = body.money("Fees")
        capture.tag = body.string("Tag")
        capture.statementDescriptor = body.string("StatementDescriptor")
        capture.culture = body.string("Culture")
        try body.check()
        let made = try await services.preauthorizations.capture(
            clientId: clientId, request: capture, kind: kind,
            multiCapture: request.headers["Idempotency-Key"] != nil, step: step)
        return MangopayResponse.json(MangopayWire.payIn(made, redirectURL: nil))
    }
}
