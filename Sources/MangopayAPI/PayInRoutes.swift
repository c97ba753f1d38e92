public import HTTPServer
public import Payments

/// Direct card pay-ins, refunds and card validations in the Mangopay dialect, and the sandbox ACS page
/// their 3-D Secure redirects lead to.
public struct PayInRoutes: RouteGroup {
    public let services: MerchantServices

    public init(services: MerchantServices) {
        self.services = services
    }

    public func register(on router: inout Router) {
        let api = MangopayHandlers(services: services, checkoutOrigins: [])
        let handlers = PayInHandlers(services: services)
        let base = "/v2.01/:clientId"
        router.post(base + "/payins/card/direct") { request in
            await api.authorized(request, idempotent: true) { clientId in
                try await handlers.create(request, clientId: clientId)
            }
        }
        router.get(base + "/payins/:id") { request in
            await api.authorized(request) { clientId in try await handlers.get(request, clientId: clientId) }
        }
        router.post(base + "/payins/:id/refunds") { request in
            await api.authorized(request, idempotent: true) { clientId in
                try await handlers.refund(request, clientId: clientId)
            }
        }
        router.get(base + "/payins/:id/refunds") { request in
            await api.authorized(request) { clientId in try await handlers.refunds(request, clientId: clientId) }
        }
        router.get(base + "/refunds/:id") { request in
            await api.authorized(request) { clientId in
                MangopayResponse.json(
                    MangopayWire.refund(
                        try await services.payIns.refund(clientId: clientId, id: request.parameters["id"] ?? "")))
            }
        }
        router.get(base + "/cards/:id/transactions") { request in
            await api.authorized(request) { clientId in try await handlers.cardTransactions(request, clientId: clientId)
            }
        }
        router.post(base + "/cards/:id/validation") { request in
            await api.authorized(request, idempotent: true) { clientId in
                try await handlers.createValidation(request, clientId: clientId)
            }
        }
        router.get(base + "/cards/:id/validation/:validationId") { request in
            await api.authorized(request) { clientId in try await handlers.getValidation(request, clientId: clientId) }
        }

        let acs = SandboxACSPage(services: services)
        let acsLimit = services.abuseLimits.acs
        router.get("/acs/:kind/:clientId/:id") { request in
            await RateLimitGate.limited(acsLimit, request, refusal: SandboxACSPage.tooManyRequests) {
                await acs.show(request)
            }
        }
        router.post("/acs/:kind/:clientId/:id") { request in
            await RateLimitGate.limited(acsLimit, request, refusal: SandboxACSPage.tooManyRequests) {
                await acs.answer(request)
            }
        }
    }
}
