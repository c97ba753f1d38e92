import HTTPServer
import OwnerAccounts
import Payments

/// The client and the Mangopay Account of its users in the Mangopay dialect: `GET /clients`, the users list,
/// SCA enrollment and consent sessions with the sandbox SCA page, regulatory status and company number formats.
struct OwnerAccountRoutes: RouteGroup {
    let services: MerchantServices

    func register(on router: inout Router) {
        let api = MangopayHandlers(services: services, checkoutOrigins: [])
        let scaWire = ScaWire(services: services)
        let base = "/v2.01/:clientId"

        router.get(base + "/clients") { request in
            await api.authorized(request) { clientId in
                guard let client = try await services.clients.client(clientId) else {
                    throw PaymentsError.notFound("Client", id: clientId)
                }
                return MangopayResponse.json(Self.client(client))
            }
        }
        router.get(base + "/users") { request in
            await api.authorized(request) { clientId in
                let page = try PageRequest(request)
                let users = try await services.users.list(clientId: clientId, page: page)
                var answers: [MangopayJSON] = []
                for user in users.items { answers.append(try await scaWire.userJSON(user)) }
                return MangopayResponse.list(
                    Page(items: answers, totalItems: users.totalItems, totalPages: users.totalPages)
                ) { $0 }
            }
        }
        for action in ["enrollment", "consent"] {
            router.post(base + "/sca/users/:id/" + action) { request in
                await api.authorized(request, idempotent: true) { clientId in
                    try await scaWire.openSession(request, clientId: clientId)
                }
            }
        }
        router.get(base + "/users/:id/Regulatory") { request in
            await api.authorized(request) { clientId in
                let user = try await services.users.get(clientId: clientId, id: request.parameters["id"] ?? "")
                // CardVault never blocks a user's flows: nothing is blocked and there is no action code.
                return MangopayResponse.json(
                    .object([
                        ("Id", .string(user.id)), ("ActionCode", .null),
                        ("ScopeBlocked", .object([("Inflows", .bool(false)), ("Outflows", .bool(false))])),
                    ]))
            }
        }
        router.post(base + "/users/data-formats/validation") { request in
            await api.authorized(request) { _ in
                var body = try MangopayFields(body: request.body)
                let number = body.object("CompanyNumber") { ($0.string("CompanyNumber"), $0.string("CountryCode")) }
                try body.check()
                let result = try CompanyNumberFormat.validate(companyNumber: number?.0, countryCode: number?.1)
                return MangopayResponse.json(
                    .object([
                        (
                            "CompanyNumber",
                            .object([
                                ("CompanyNumber", .string(result.companyNumber)),
                                ("CountryCode", .string(result.countryCode)), ("IsValid", .bool(result.isValid)),
                                ("ValidationRules", .array(result.validationRules.map { .string($0) })),
                            ])
                        )
                    ]))
            }
        }

        let page = ScaPage(services: services)
        let limit = services.abuseLimits.hostedPages
        router.get("/sca/:clientId/:id") { request in
            await RateLimitGate.limited(limit, request, refusal: ScaPage.tooManyRequests) { await page.show(request) }
        }
        router.post("/sca/:clientId/:id") { request in
            await RateLimitGate.limited(limit, request, refusal: ScaPage.tooManyRequests) {
                await page.complete(request)
            }
        }
    }

    static func client(_ client: Client) -> MangopayJSON {
        .object([
            ("ClientId", .string(client.clientId)), ("Name", .string(client.name)),
            ("RegisteredName", .string(client.name)), ("CreationDate", .int(client.creationDate)),
            ("TechEmails", .array([])), ("AdminEmails", .array([])), ("BillingEmails", .array([])),
            ("FraudEmails", .array([])), ("HeadquartersAddress", .null), ("HeadquartersPhoneNumber", .null),
            ("TaxNumber", .null), ("PlatformType", .null), ("PlatformDescription", .null), ("PlatformURL", .null),
            ("PrimaryThemeColour", .null), ("PrimaryButtonColour", .null), ("Logo", .null),
            ("CompanyReference", .null),
        ])
    }
}
