public import HTTPServer
public import Payments

/// PayPal pay-ins in the Mangopay dialect (one-off, recurring and the older web call) and the sandbox PayPal
/// approval page their `RedirectURL` leads to.
public struct PayPalRoutes: RouteGroup {
    public let services: MerchantServices

    /// The three calls that create a PayPal pay-in.
    private enum Call { case oneOff, legacy, recurring }

    public init(services: MerchantServices) {
        self.services = services
    }

    public func register(on router: inout Router) {
        let api = MangopayHandlers(services: services, checkoutOrigins: [])
        let payIns = services.payIns
        for (path, call) in [
            ("/payins/payment-methods/paypal", Call.oneOff), ("/payins/paypal/web", .legacy),
            ("/payins/payment-methods/paypal/recurring", .recurring),
        ] {
            router.post("/v2.01/:clientId" + path) { request in
                await api.authorized(request, idempotent: true) { clientId in
                    var body = try MangopayFields(body: request.body)
                    let payPal = body.payPalPayInRequest(legacy: call == .legacy)
                    try body.check()
                    let payIn =
                        call == .recurring
                        ? try await payIns.createRecurringPayPalPayIn(clientId: clientId, request: payPal)
                        : try await payIns.createPayPalPayIn(clientId: clientId, request: payPal)
                    return MangopayResponse.json(
                        MangopayWire.payIn(payIn, redirectURL: payIns.challengeURL(for: payIn)))
                }
            }
        }
        let page = PayPalApprovalPage(payIns: payIns)
        let limit = services.abuseLimits.acs
        router.get("/paypal/checkout/:clientId/:id") { request in
            await RateLimitGate.limited(limit, request, refusal: SandboxACSPage.tooManyRequests) {
                await page.show(request)
            }
        }
        router.post("/paypal/checkout/:clientId/:id") { request in
            await RateLimitGate.limited(limit, request, refusal: SandboxACSPage.tooManyRequests) {
                await page.answer(request)
            }
        }
    }
}
