import BusinessMetrics
import Foundation
import HTTPServer
import Payments
import VaultCore

/// The request handlers behind ``MangopayRoutes``: authentication, idempotency, body reading and rendering
/// around the Payments services. No business rules live here.
struct MangopayHandlers: Sendable {
    let services: MerchantServices
    let checkoutOrigins: Set<String>
    /// The origin of the daemon's own pages (`publicURL`'s scheme, host and port): always allowed to tokenize.
    var ownOrigin: String? = nil

    var now: Int64 { Int64(services.environment.clock.now.timeIntervalSince1970.rounded(.down)) }

    // MARK: Authentication

    /// `POST /v2.01/oauth/token`: Basic `ClientId:ApiKey`, `grant_type=client_credentials` (form or JSON body,
    /// or none) → `{"access_token","token_type":"Bearer","expires_in"}`, status exactly 200.
    func token(_ request: Request) async -> Response {
        guard let header = request.headers["Authorization"],
            let credentials = AuthorizationHeader.credentials(header, scheme: "Basic"),
            let decoded = Data(base64Encoded: credentials),
            let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":")
        else {
            return MangopayErrorResponse.oauth(
                "invalid_client", "The authorization header was malformed or not recognized", status: .unauthorized)
        }
        if let grant = grantType(request.body), grant != "client_credentials" {
            return MangopayErrorResponse.oauth(
                "unsupported_grant_type", "Only the client_credentials grant is supported", status: .badRequest)
        }
        do {
            let client = try await services.clients.authenticate(
                clientId: String(text[..<colon]), apiKey: String(text[text.index(after: colon)...]))
            let issued = try await services.bearerTokens.issue(for: client)
            var response = MangopayResponse.json(
                .object([
                    ("access_token", .string(issued.accessToken.unsafeRevealed)), ("token_type", .string("Bearer")),
                    ("expires_in", .int(Int64(issued.expiresIn))),
                ]))
            response.headers.set("Cache-Control", "no-store")
            return response
        } catch let error as PaymentsError where error.code == .invalidClient {
            return MangopayErrorResponse.oauth(
                "invalid_client", "The authorization header was malformed or not recognized", status: .unauthorized)
        } catch let error as PaymentsError {
            return MangopayErrorResponse.response(error, request: request, now: now)
        } catch {
            return unexpected(error, request)
        }
    }

    /// The 429 of the Mangopay dialect (the rate limits of ``AbuseLimits``).
    func tooManyRequests(_ request: Request, retryAfter seconds: Int) -> Response {
        MangopayErrorResponse.body(
            status: .tooManyRequests, type: "too_many_requests",
            message: "Too many requests from this address; retry after \(seconds) seconds", errors: nil,
            request: request, now: now)
    }

    /// The `grant_type` of a token request body, JSON (as the Python SDK sends it) or form-encoded.
    private func grantType(_ body: [UInt8]) -> String? {
        guard !body.isEmpty else { return nil }
        if let json = try? MangopayJSON.parse(body), case .object = json {
            var fields = MangopayFields(object: json)
            return fields.string("grant_type")
        }
        return (try? URLEncodedForm.parse(body))?["grant_type"]
    }

    /// Runs `body` for an authenticated request: a valid bearer token whose client is the path's `clientId`.
    /// Domain errors become Mangopay error bodies; with `idempotent`, an `Idempotency-Key` header replays or
    /// conflicts as DESIGN.md section 3 says.
    func authorized(
        _ request: Request, idempotent: Bool = false, _ body: (String) async throws -> Response
    ) async -> Response {
        let clientId: String
        do {
            clientId = try await authenticate(request)
        } catch {
            return respond(to: error, request)
        }
        guard idempotent, let key = request.headers["Idempotency-Key"] else {
            return await run(request) { try await body(clientId) }
        }
        let ledger = services.idempotency
        do {
            switch try await ledger.begin(
                clientId: clientId, key: key, method: request.method.rawValue, path: request.path, body: request.body)
            {
            case .replay(let stored):
                return Response(
                    status: HTTPStatus(stored.statusCode), headers: ["Content-Type": stored.contentType],
                    body: stored.body)
            case .proceed:
                let response = await run(request) { try await body(clientId) }
                if response.status.code >= 500 {
                    try? await ledger.abandon(clientId: clientId, key: key)
                } else {
                    try await ledger.record(
                        clientId: clientId, key: key,
                        response: StoredResponse(
                            statusCode: response.status.code,
                            contentType: response.headers["Content-Type"] ?? MangopayResponse.jsonContentType,
                            body: response.body, requestURL: request.path, date: now))
                }
                return response
            }
        } catch {
            return respond(to: error, request)
        }
    }

    private func authenticate(_ request: Request) async throws -> String {
        guard let header = request.headers["Authorization"],
            let token = AuthorizationHeader.credentials(header, scheme: "Bearer")
        else { throw PaymentsError(.invalidToken, "The authorization credentials are not valid") }
        let owner = try await services.bearerTokens.clientId(forToken: token)
        guard owner == request.parameters["clientId"] else {
            throw PaymentsError(.forbidden, "Your authorization do not allow you to access to this information")
        }
        return owner
    }

    private func run(_ request: Request, _ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch {
            return respond(to: error, request)
        }
    }

    func respond(to error: any Error, _ request: Request) -> Response {
        if let error = error as? PaymentsError {
            return MangopayErrorResponse.response(error, request: request, now: now)
        }
        if let damaged = PaymentsError.damagedRecord(from: error) {
            // The record's collection and id go to the operator's log only (with this request's id).
            request.logger.error(
                "damaged record",
                ["route": .string(request.route), "error": .string(PaymentsError.damagedRecordDetail(error))])
            return MangopayErrorResponse.response(damaged, request: request, now: now)
        }
        if let error = error as? HTTPError, error.status.code < 500 {
            return MangopayErrorResponse.body(
                status: error.status, type: MangopayErrorResponse.type(for: error.code), message: error.message,
                errors: nil, request: request,
                now: now)
        }
        return unexpected(error, request)
    }

    private func unexpected(_ error: any Error, _ request: Request) -> Response {
        ErrorResponder.response(for: error, request: request, dialect: .mangopay)
    }

    // MARK: Reading requests

    private func page(_ request: Request) throws -> PageRequest { try PageRequest(request) }

    func id(_ request: Request, _ name: String = "id") -> String { request.parameters[name] ?? "" }

    // MARK: Users and wallets

    func createUser(_ request: Request, clientId: String, type: PersonType, sca: Bool) async throws -> Response {
        var body = try MangopayFields(body: request.body)
        let fields = body.userFields(type: type, sca: sca)
        if let personType = body.string("PersonType"), personType != type.rawValue {
            throw PaymentsError.invalid("PersonType", "The PersonType must be \(type.rawValue) on this endpoint.")
        }
        try body.check()
        let user = try await services.users.create(clientId: clientId, type: type, sca: sca, fields: fields)
        return try await ScaWire(services: services).user(user, opening: true)
    }

    func updateUser(_ request: Request, clientId: String, type: PersonType) async throws -> Response {
        var body = try MangopayFields(body: request.body)
        let existing = try await services.users.get(clientId: clientId, id: id(request), type: type)
        let changes = body.userFields(type: type, sca: existing.sca)
        try body.check()
        let user = try await services.users.update(clientId: clientId, id: existing.id, type: type, changes: changes)
        return try await ScaWire(services: services).user(user)
    }

    func getUser(_ request: Request, clientId: String, type: PersonType?) async throws -> Response {
        try await ScaWire(services: services).user(
            try await services.users.get(clientId: clientId, id: id(request), type: type))
    }

    func createWallet(_ request: Request, clientId: String) async throws -> Response {
        var body = try MangopayFields(body: request.body)
        let owners = body.strings("Owners")
        let description = body.string("Description")
        let currency = body.string("Currency")
        let tag = body.string("Tag")
        try body.check()
        let wallet = try await services.wallets.create(
            clientId: clientId, owners: owners, description: description, currency: currency, tag: tag)
        return MangopayResponse.json(MangopayWire.wallet(wallet))
    }

    func updateWallet(_ request: Request, clientId: String) async throws -> Response {
        var body = try MangopayFields(body: request.body)
        let description = body.string("Description")
        let tag = body.string("Tag")
        try body.check()
        let wallet = try await services.wallets.update(
            clientId: clientId, id: id(request), description: description, tag: tag)
        return MangopayResponse.json(MangopayWire.wallet(wallet))
    }

    func listWallets(_ request: Request, clientId: String) async throws -> Response {
        let page = try page(request)
        if let refused = try await ScaWire(services: services).walletAccess(
            request, clientId: clientId, ownerId: id(request))
        {
            return refused
        }
        return MangopayResponse.list(
            try await services.wallets.list(clientId: clientId, userId: id(request), page: page),
            render: MangopayWire.wallet)
    }

    // MARK: Card registrations and cards

    func render(_ registration: CardRegistration) -> Response {
        MangopayResponse.json(
            MangopayWire.cardRegistration(
                registration,
                url: services.cardRegistrations.tokenizationURL(clientId: registration.clientId, id: registration.id)))
    }

    func createCardRegistration(_ request: Request, clientId: String) async throws -> Response {
        var body = try MangopayFields(body: request.body)
        let userId = body.string("UserId")
        let currency = body.string("Currency")
        let cardType = body.string("CardType")
        let tag = body.string("Tag")
        try body.check()
        return render(
            try await services.cardRegistrations.create(
                clientId: clientId, userId: userId, currency: currency, cardType: cardType, tag: tag))
    }

    func updateCardRegistration(_ request: Request, clientId: String) async throws -> Response {
        var body = try MangopayFields(body: request.body)
        let registrationData = body.string("RegistrationData")
        let cardHolderName = body.string("CardHolderName")
        let tag = body.string("Tag")
        try body.check()
        return render(
            try await services.cardRegistrations.update(
                clientId: clientId, id: id(request), registrationData: registrationData, cardHolderName: cardHolderName,
                tag: tag))
    }

    func updateCard(_ request: Request, clientId: String) async throws -> Response {
        var body = try MangopayFields(body: request.body)
        let active = body.boolean("Active")
        try body.check()
        return MangopayResponse.json(
            MangopayWire.card(
                try await services.cards.update(clientId: clientId, id: id(request), active: active)))
    }

    func listUserCards(_ request: Request, clientId: String) async throws -> Response {
        let page = try page(request)
        return MangopayResponse.list(
            try await services.cards.list(clientId: clientId, userId: id(request), page: page),
            render: MangopayWire.card)
    }

    func listFingerprintCards(_ request: Request, clientId: String) async throws -> Response {
        let page = try page(request)
        return MangopayResponse.list(
            try await services.cards.list(clientId: clientId, fingerprint: id(request, "fingerprint"), page: page),
            render: MangopayWire.card)
    }

    /// `GET /cards/fingerprints/{fingerprint}/transactions`: the pay-ins of every card with the fingerprint.
    func listFingerprintTransactions(_ request: Request, clientId: String) async throws -> Response {
        let page = try page(request)
        let payIns = services.payIns
        return MangopayResponse.list(
            try await payIns.transactions(clientId: clientId, fingerprint: id(request, "fingerprint"), page: page)
        ) { MangopayWire.payIn($0, redirectURL: payIns.challengeURL(for: $0)) }
    }

    /// Pre-authorization lists: always empty, pre-authorizations do not exist here (the card must exist).
    func emptyCardList(_ request: Request, clientId: String, requireCard: Bool) async throws -> Response {
        _ = try page(request)
        if requireCard { _ = try await services.cards.get(clientId: clientId, id: id(request)) }
        return MangopayResponse.list(Page<Card>(items: [], totalItems: 0, totalPages: 0), render: MangopayWire.card)
    }

    // MARK: Tokenization

    /// `POST /tokenize/{ClientId}/{CardRegistrationId}`: the browser's form post. Answers `data=…` (with the
    /// `Profiling-Attempt-Reference` header) or `errorCode=…` as plain text; 429 when the address is limited.
    func tokenize(_ request: Request) async -> Response {
        defer { request.wipeBody() }  // also when the form did not parse
        // A browser on an origin that may not read the answer is refused before the form is read: the card is
        // not tokenized and the registration stays usable (a CORS failure would otherwise burn it unseen).
        if let origin = request.headers["Origin"], !mayTokenize(origin: origin) {
            request.wipeBody()
            services.environment.metrics.tokenization(.originRefused)
            request.logger.warning(
                "tokenization refused: browser origin not in checkoutOrigins",
                ["origin": .string(TokenizationOrigin.loggable(origin))])
            var refused = Response.text("errorCode=09201", status: .forbidden)
            refused.errorCode = "origin_refused"
            refused.headers.set("Cache-Control", "no-store")
            refused.headers.add("Vary", "Origin")
            return refused
        }
        var response: Response
        do {
            let form = try request.formFields()
            request.wipeBody()  // the card number now lives in `form` only
            var device: [String: String] = [:]
            // One pass over the posted fields (the first value of a name wins, as `form[name]` would give).
            let deviceFields = ProfilingAttempt.deviceFieldNames
            for (name, value) in form.pairs where device[name] == nil && deviceFields.contains(name) {
                device[name] = value
            }
            let signals = DeviceSignals(
                ipAddress: request.remoteAddress.isEmpty ? nil : request.remoteAddress,
                userAgent: request.headers["User-Agent"], acceptLanguage: request.headers["Accept-Language"],
                device: device)
            let result = try await services.cardRegistrations.tokenize(
                clientId: id(request, "clientId"), id: id(request),
                form: TokenizationForm(
                    data: form["data"], accessKeyRef: form["accessKeyRef"], cardNumber: form["cardNumber"],
                    cardExpirationDate: form["cardExpirationDate"], cardCvx: form["cardCvx"]),
                signals: signals)
            switch result {
            case .success(let token, let reference):
                response = .text("data=" + token.unsafeRevealed)
                response.headers.set("Profiling-Attempt-Reference", reference)
            case .failure(let code):
                response = .text("errorCode=" + code.rawValue)
                response.errorCode = code.rawValue
            case .rateLimited(let seconds):
                response = .text("errorCode=09102", status: .tooManyRequests)
                response.headers.set("Retry-After", String(seconds))
                response.errorCode = "09102"
            }
        } catch let error as HTTPError where error.status.code < 500 {
            response = .text("errorCode=02101", status: .badRequest)
            response.errorCode = "02101[" + error.code.rawValue + "]"
            services.environment.metrics.tokenization(.badRequest)
        } catch let error as PaymentsError where error.code == .unavailable {
            response = .text("errorCode=02101", status: .serviceUnavailable)
            response.errorCode = "02101[unavailable]"
            services.environment.metrics.tokenization(.unavailable)
        } catch {
            response = unexpected(error, request)
            services.environment.metrics.tokenization(.error)
        }
        response.headers.set("Cache-Control", "no-store")
        addCORS(to: &response, request)
        return response
    }

    /// CORS preflight for the tokenization endpoint.
    func preflight(_ request: Request) -> Response {
        var response = Response(status: .noContent)
        addCORS(to: &response, request)
        if response.headers.contains("Access-Control-Allow-Origin") {
            response.headers.set("Access-Control-Allow-Methods", "POST, OPTIONS")
            response.headers.set("Access-Control-Allow-Headers", "Content-Type")
            response.headers.set("Access-Control-Max-Age", "600")
        }
        return response
    }

    /// True when a browser on `origin` may post card data: a `checkoutOrigins` entry (or `*`), or the daemon's own
    /// pages.
    func mayTokenize(origin: String) -> Bool {
        checkoutOrigins.contains(origin) || checkoutOrigins.contains("*") || origin == ownOrigin
    }

    func addCORS(to response: inout Response, _ request: Request) {
        guard let origin = request.headers["Origin"], checkoutOrigins.contains(origin) || checkoutOrigins.contains("*")
        else { return }
        response.headers.set("Access-Control-Allow-Origin", origin)
        response.headers.set("Access-Control-Expose-Headers", "Profiling-Attempt-Reference")
        response.headers.add("Vary", "Origin")
    }
}
