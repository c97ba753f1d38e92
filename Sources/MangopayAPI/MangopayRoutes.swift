import Foundation
public import HTTPServer
public import Payments
import VaultCore

/// The Mangopay v2.01 dialect: OAuth, users, wallets, card registrations, the tokenization endpoint, cards,
/// profiling attempts, idempotent responses, and the OpenAPI document at `GET /openapi.yaml`.
public struct MangopayRoutes: RouteGroup {
    public let services: MerchantServices
    /// Origins (`https://shop.example`) whose browsers may post card data to the tokenization endpoint;
    /// `*` allows any.
    public let checkoutOrigins: Set<String>
    /// The OpenAPI document served at `/openapi.yaml`.
    public let openAPIDocument: [UInt8]?

    public init(services: MerchantServices, checkoutOrigins: [String] = [], openAPIDocument: [UInt8]? = nil) {
        self.services = services
        self.checkoutOrigins = Set(checkoutOrigins)
        self.openAPIDocument = openAPIDocument
    }

    /// Reads `docs/openapi.yaml` from the working directory or next to the repository the executable was built in.
    public static func loadOpenAPIDocument() -> [UInt8]? {
        var candidates = ["docs/openapi.yaml"]
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath()
        var directory = executable.deletingLastPathComponent()
        for _ in 0..<4 {
            candidates.append(directory.appendingPathComponent("docs/openapi.yaml").path)
            directory = directory.deletingLastPathComponent()
        }
        for path in candidates {
            if let data = FileManager.default.contents(atPath: path) { return Array(data) }
        }
        return nil
    }

    public func register(on router: inout Router) {
        let api = MangopayHandlers(
            services: services, checkoutOrigins: checkoutOrigins,
            ownOrigin: TokenizationOrigin.origin(ofURL: services.environment.configuration.publicBaseURL))
        // Failed authentications count against the address; a limited address is refused before its
        // credentials are checked, so guessing API keys is as slow as the limit.
        let tokenFailures = services.abuseLimits.tokenFailures
        router.post("/v2.01/oauth/token") { request in
            await RateLimitGate.limitedFailures(
                tokenFailures, request, refusal: { api.tooManyRequests(request, retryAfter: $0) },
                failed: { $0.status == .unauthorized }
            ) { await api.token(request) }
        }

        let base = "/v2.01/:clientId"
        for (prefix, sca) in [("", false), ("/sca", true)] {
            for (segment, type) in [("natural", PersonType.natural), ("legal", .legal)] {
                let path = base + prefix + "/users/" + segment
                router.post(path) { request in
                    await api.authorized(request, idempotent: true) { clientId in
                        try await api.createUser(request, clientId: clientId, type: type, sca: sca)
                    }
                }
                router.put(path + "/:id") { request in
                    await api.authorized(request) { clientId in
                        try await api.updateUser(request, clientId: clientId, type: type)
                    }
                }
                router.get(path + "/:id") { request in
                    await api.authorized(request) { clientId in
                        try await api.getUser(request, clientId: clientId, type: type)
                    }
                }
            }
            router.get(base + prefix + "/users/:id") { request in
                await api.authorized(request) { clientId in
                    try await api.getUser(request, clientId: clientId, type: nil)
                }
            }
        }
        router.get(base + "/users/:id/wallets") { request in
            await api.authorized(request) { clientId in try await api.listWallets(request, clientId: clientId) }
        }
        router.get(base + "/users/:id/cards") { request in
            await api.authorized(request) { clientId in try await api.listUserCards(request, clientId: clientId) }
        }

        router.post(base + "/wallets") { request in
            await api.authorized(request, idempotent: true) { clientId in
                try await api.createWallet(request, clientId: clientId)
            }
        }
        router.get(base + "/wallets/:id") { request in
            await api.authorized(request) { clientId in
                let wallet = try await api.services.wallets.get(clientId: clientId, id: request.parameters["id"] ?? "")
                if let refused = try await ScaWire(services: api.services).walletAccess(
                    request, clientId: clientId, ownerId: wallet.ownerId)
                {
                    return refused
                }
                return MangopayResponse.json(MangopayWire.wallet(wallet))
            }
        }
        router.put(base + "/wallets/:id") { request in
            await api.authorized(request) { clientId in try await api.updateWallet(request, clientId: clientId) }
        }

        router.post(base + "/cardregistrations") { request in
            await api.authorized(request, idempotent: true) { clientId in
                try await api.createCardRegistration(request, clientId: clientId)
            }
        }
        router.get(base + "/cardregistrations/:id") { request in
            await api.authorized(request) { clientId in
                let registration = try await api.services.cardRegistrations.get(
                    clientId: clientId, id: request.parameters["id"] ?? "")
                return api.render(registration)
            }
        }
        // The merchant completes with its bearer token; the shopper's device (Checkout SDKs, JS kit) without
        // credentials, by PUT (JSON) or POST (form), under /v2.01/ or the JS kit's /v2/.
        for version in ["/v2.01", "/v2"] {
            let path = version + "/:clientId/cardregistrations/:id"
            router.put(path) { request in
                guard version == "/v2.01", request.headers["Authorization"] != nil else {
                    return await api.completeFromDevice(request)
                }
                return await api.authorized(request) { clientId in
                    try await api.updateCardRegistration(request, clientId: clientId)
                }
            }
            router.post(path) { await api.completeFromDevice($0) }
            router.add(.options, path) { api.completionPreflight($0) }
        }

        router.get(base + "/cards/:id") { request in
            await api.authorized(request) { clientId in
                MangopayResponse.json(
                    MangopayWire.card(
                        try await api.services.cards.get(clientId: clientId, id: request.parameters["id"] ?? "")))
            }
        }
        router.put(base + "/cards/:id") { request in
            await api.authorized(request) { clientId in try await api.updateCard(request, clientId: clientId) }
        }
        router.get(base + "/cards/fingerprints/:fingerprint") { request in
            await api.authorized(request) { clientId in try await api.listFingerprintCards(request, clientId: clientId)
            }
        }
        // Card transactions are listed by the pay-in routes (by fingerprint here), preauthorizations by theirs.
        router.get(base + "/cards/fingerprints/:fingerprint/transactions") { request in
            await api.authorized(request) { clientId in
                try await api.listFingerprintTransactions(request, clientId: clientId)
            }
        }

        router.get(base + "/profiling/attempts/:reference") { request in
            await api.authorized(request) { clientId in
                let reference = request.parameters["reference"] ?? ""
                let attempt = try await api.services.cards.profilingAttempt(clientId: clientId, reference: reference)
                let assessments = try await api.services.payIns.assessments(clientId: clientId, reference: reference)
                return MangopayResponse.json(MangopayWire.profilingAttempt(attempt, assessments: assessments))
            }
        }
        for path in [base + "/responses/:key", base + "/responses//:key"] {
            router.get(path) { request in
                await api.authorized(request) { clientId in
                    MangopayResponse.json(
                        MangopayWire.storedResponse(
                            try await api.services.idempotency.response(
                                clientId: clientId, key: request.parameters["key"] ?? "")))
                }
            }
        }

        OwnerAccountRoutes(services: services).register(on: &router)
        PayOutRoutes(services: services).register(on: &router)

        router.post("/tokenize/:clientId/:id") { await api.tokenize($0) }
        router.add(.options, "/tokenize/:clientId/:id") { api.preflight($0) }

        let document = openAPIDocument
        router.get("/openapi.yaml") { _ in
            guard let document else { return HTTPErrorDialect.mangopay.response(for: .notFound) }
            return Response(status: .ok, headers: ["Content-Type": "application/yaml; charset=utf-8"], body: document)
        }
    }
}
