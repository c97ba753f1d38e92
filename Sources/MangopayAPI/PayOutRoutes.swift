import HTTPServer
import OwnerAccounts
import Payments
import Payouts

/// Bank accounts, bank-wire pay-outs, the client's wallets and KYC documents in the Mangopay dialect.
struct PayOutRoutes: RouteGroup {
    let services: MerchantServices

    func register(on router: inout Router) {
        let api = MangopayHandlers(services: services, checkoutOrigins: [])
        let accounts = BankAccountService(environment: services.environment)
        let payOuts = PayOutService(environment: services.environment)
        let clientWallets = ClientWallets(environment: services.environment)
        let base = "/v2.01/:clientId"

        router.post(base + "/users/:id/bankaccounts/iban") { request in
            await api.authorized(request, idempotent: true) { clientId in
                let account = try await accounts.create(
                    clientId: clientId, userId: Self.parameter(request), request: try Self.bankAccountRequest(request))
                return MangopayResponse.json(Self.bankAccount(account))
            }
        }
        router.post(base + "/clients/bankaccounts/iban") { request in
            await api.authorized(request, idempotent: true) { clientId in
                let account = try await accounts.create(
                    clientId: clientId, userId: nil, request: try Self.bankAccountRequest(request))
                return MangopayResponse.json(Self.bankAccount(account))
            }
        }
        router.get(base + "/users/:id/bankaccounts") { request in
            await api.authorized(request) { clientId in
                let page = try await accounts.list(
                    clientId: clientId, userId: Self.parameter(request), page: PageRequest(request))
                return MangopayResponse.list(page) { Self.bankAccount($0) }
            }
        }
        router.get(base + "/users/:id/bankaccounts/:accountId") { request in
            await api.authorized(request) { clientId in
                MangopayResponse.json(
                    Self.bankAccount(
                        try await accounts.get(
                            clientId: clientId, id: Self.parameter(request, "accountId"),
                            userId: Self.parameter(request))))
            }
        }

        router.post(base + "/payouts/bankwire") { request in
            await api.authorized(request, idempotent: true) { clientId in
                MangopayResponse.json(
                    Self.payOut(try await payOuts.create(clientId: clientId, request: try Self.payOutRequest(request))))
            }
        }
        router.post(base + "/clients/payouts") { request in
            await api.authorized(request, idempotent: true) { clientId in
                let payOut = try await payOuts.createClientPayOut(
                    clientId: clientId, request: try Self.payOutRequest(request))
                return MangopayResponse.json(Self.payOut(payOut))
            }
        }
        for path in [base + "/payouts/:id", base + "/payouts/bankwire/:id"] {
            router.get(path) { request in
                await api.authorized(request) { clientId in
                    MangopayResponse.json(
                        Self.payOut(try await payOuts.get(clientId: clientId, id: Self.parameter(request))))
                }
            }
        }
        router.get(base + "/payouts/:id/refunds") { request in
            await api.authorized(request) { clientId in
                // Pay-outs are never returned by a bank in the sandbox: the list is empty, for a pay-out that exists.
                _ = try PageRequest(request)
                _ = try await payOuts.get(clientId: clientId, id: Self.parameter(request))
                return MangopayResponse.list(Page<Refund>(items: [], totalItems: 0, totalPages: 0)) {
                    MangopayWire.refund($0)
                }
            }
        }

        router.get(base + "/clients/wallets") { request in
            await api.authorized(request) { clientId in
                MangopayResponse.json(.array(try await clientWallets.list(clientId: clientId).map(Self.clientWallet)))
            }
        }
        router.get(base + "/clients/wallets/:fundsType") { request in
            await api.authorized(request) { clientId in
                let type = Self.parameter(request, "fundsType")
                guard ClientWallet.fundsTypes.contains(type) else {
                    throw PaymentsError.invalid("FundsType", "The FundsType must be FEES or CREDIT.")
                }
                let wallets = try await clientWallets.list(clientId: clientId, fundsType: type)
                return MangopayResponse.json(.array(wallets.map(Self.clientWallet)))
            }
        }
        router.get(base + "/clients/wallets/:fundsType/:currency") { request in
            await api.authorized(request) { clientId in
                let walletId = Self.parameter(request, "fundsType") + "_" + Self.parameter(request, "currency")
                return MangopayResponse.json(
                    Self.clientWallet(try await clientWallets.get(clientId: clientId, id: walletId)))
            }
        }

        registerKyc(on: &router, api: api)
    }

    static func parameter(_ request: Request, _ name: String = "id") -> String { request.parameters[name] ?? "" }

    func registerKyc(on router: inout Router, api: MangopayHandlers) {
        let documents = KycDocumentService(environment: services.environment)
        let base = "/v2.01/:clientId"
        router.post(base + "/users/:id/KYC/documents") { request in
            await api.authorized(request, idempotent: true) { clientId in
                var body = try MangopayFields(body: request.body)
                let type = body.string("Type")
                let tag = body.string("Tag")
                try body.check()
                let document = try await documents.create(
                    clientId: clientId, userId: request.parameters["id"] ?? "", type: type, tag: tag)
                return MangopayResponse.json(Self.kycDocument(document))
            }
        }
        for (path, byUser) in [(base + "/users/:id/KYC/documents", true), (base + "/KYC/documents", false)] {
            router.get(path) { request in
                await api.authorized(request) { clientId in
                    let page = try await documents.list(
                        clientId: clientId, userId: byUser ? request.parameters["id"] ?? "" : nil,
                        page: PageRequest(request))
                    return MangopayResponse.list(page) { Self.kycDocument($0) }
                }
            }
        }
        for (path, byUser) in [
            (base + "/users/:id/KYC/documents/:documentId", true), (base + "/KYC/documents/:documentId", false),
        ] {
            router.get(path) { request in
                await api.authorized(request) { clientId in
                    let document = try await documents.get(
                        clientId: clientId, id: request.parameters["documentId"] ?? "",
                        userId: byUser ? request.parameters["id"] ?? "" : nil)
                    return MangopayResponse.json(Self.kycDocument(document))
                }
            }
        }
    }
}
