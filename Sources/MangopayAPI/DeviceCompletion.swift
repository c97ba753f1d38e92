import HTTPServer
import Payments
import VaultCore

/// The card registration's completion by the shopper's device, without credentials: the Checkout SDKs'
/// `PUT /v2.01/{ClientId}/CardRegistrations/{Id}` with `{"RegistrationData":"data=…"}`, and the JS kit's
/// cross-origin form `POST` of `Id` and `RegistrationData` to the same path (under `/v2/` too).
///
/// The `RegistrationData` is the proof: ``CardRegistrationService/completeFromDevice(clientId:id:registrationData:)``
/// takes only the value the registration's tokenization answered, once. Browsers get CORS as the tokenization
/// endpoint gives it (`checkoutOrigins`), and failed completions count against the address like tokenizations.
extension MangopayHandlers {
    func completeFromDevice(_ request: Request) async -> Response {
        let refusal = { (seconds: Int) in withCORS(tooManyRequests(request, retryAfter: seconds), request) }
        return await RateLimitGate.limitedFailures(
            services.abuseLimits.tokenization, request, refusal: refusal, failed: { $0.status.code >= 400 },
            { await completion(request) })
    }

    private func completion(_ request: Request) async -> Response {
        defer { request.wipeBody() }  // the one-time `data=` token
        if let origin = request.headers["Origin"], !mayTokenize(origin: origin) {
            request.logger.warning(
                "card registration completion refused: browser origin not in checkoutOrigins",
                ["origin": .string(TokenizationOrigin.loggable(origin))])
            var refused = respond(
                to: PaymentsError(.forbidden, "This origin may not complete card registrations"), request)
            refused.headers.add("Vary", "Origin")
            return refused
        }
        let response: Response
        do {
            let registrationData = try deviceRegistrationData(request)
            response = render(
                try await services.cardRegistrations.completeFromDevice(
                    clientId: id(request, "clientId"), id: id(request), registrationData: registrationData))
        } catch {
            response = respond(to: error, request)
        }
        return withCORS(response, request)
    }

    /// CORS preflight for the device's completion (a JSON `PUT` from a page is not a simple request).
    func completionPreflight(_ request: Request) -> Response {
        var response = withCORS(Response(status: .noContent), request)
        if response.headers.contains("Access-Control-Allow-Origin") {
            response.headers.set("Access-Control-Allow-Methods", "PUT, POST, OPTIONS")
            response.headers.set("Access-Control-Allow-Headers", "Content-Type")
            response.headers.set("Access-Control-Max-Age", "600")
        }
        return response
    }

    /// The `RegistrationData` of a JSON body (`{"RegistrationData": …}`, other fields ignored) or of a form (`Id`,
    /// when present, must be the path's registration).
    private func deviceRegistrationData(_ request: Request) throws -> String {
        let isJSON = request.body.first { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 } == UInt8(ascii: "{")
        let registrationData: String?
        if isJSON {
            var body = try MangopayFields(body: request.body)
            registrationData = body.string("RegistrationData")
        } else {
            let form = try request.formFields()
            if let posted = form["Id"], posted != id(request) { throw CardRegistrationService.deviceRefusal }
            registrationData = form["RegistrationData"]
        }
        guard let registrationData else { throw CardRegistrationService.deviceRefusal }
        return registrationData
    }

    private func withCORS(_ response: Response, _ request: Request) -> Response {
        var response = response
        response.headers.set("Cache-Control", "no-store")
        addCORS(to: &response, request)
        return response
    }
}
