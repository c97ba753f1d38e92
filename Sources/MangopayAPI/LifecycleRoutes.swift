public import HTTPServer
public import Payments

/// The card lifecycle in the Mangopay dialect: recurring registrations and their CIT/MIT pay-ins, Apple Pay and
/// Google Pay pay-ins, BIN metadata, user and wallet transaction lists, user categories and closing.
public struct LifecycleRoutes: RouteGroup {
    public let services: MerchantServices

    public init(services: MerchantServices) {
        self.services = services
    }

    public func register(on router: inout Router) {
        let api = MangopayHandlers(services: services, checkoutOrigins: [])
        let handlers = LifecycleHandlers(services: services)
        let base = "/v2.01/:clientId"

        router.post(base + "/recurringpayinregistrations") { request in
            await api.authorized(request, idempotent: true) { clientId in
                try await handlers.createRegistration(request, clientId: clientId)
            }
        }
        router.get(base + "/recurringpayinregistrations/:id") { request in
            await api.authorized(request) { clientId in try await handlers.getRegistration(request, clientId: clientId)
            }
        }
        router.put(base + "/recurringpayinregistrations/:id") { request in
            await api.authorized(request) { clientId in
                try await handlers.updateRegistration(request, clientId: clientId)
            }
        }
        router.post(base + "/payins/recurring/card/direct") { request in
            await api.authorized(request, idempotent: true) { clientId in
                try await handlers.createRecurringPayIn(request, clientId: clientId)
            }
        }
        for (path, kind) in [
            ("/payins/applepay/direct", PayInKind.applePay), ("/payins/payment-methods/googlepay", .googlePay),
            ("/payins/googlepay/direct", .googlePay),
        ] {
            router.post(base + path) { request in
                await api.authorized(request, idempotent: true) { clientId in
                    try await handlers.createWalletPayIn(request, clientId: clientId, kind: kind)
                }
            }
        }
        router.post(base + "/payment-methods/metadata") { request in
            await api.authorized(request, idempotent: true) { clientId in
                try handlers.metadata(request, clientId: clientId)
            }
        }
        router.get(base + "/users/:id/transactions") { request in
            await api.authorized(request) { clientId in
                try await handlers.transactions(request, clientId: clientId, of: .user)
            }
        }
        router.get(base + "/wallets/:id/transactions") { request in
            await api.authorized(request) { clientId in
                try await handlers.transactions(request, clientId: clientId, of: .wallet)
            }
        }
        for prefix in ["", "/sca"] {
            for (segment, type) in [("natural", PersonType.natural), ("legal", .legal)] {
                let path = base + prefix + "/users/" + segment + "/:id"
                router.put(path + "/category") { request in
                    await api.authorized(request) { clientId in
                        try await handlers.categorize(request, clientId: clientId, type: type, sca: !prefix.isEmpty)
                    }
                }
                router.delete(path) { request in
                    await api.authorized(request) { clientId in
                        MangopayResponse.json(
                            MangopayWire.user(
                                try await services.closeUser(
                                    clientId: clientId, id: request.parameters["id"] ?? "",
                                    type: type)))
                    }
                }
            }
        }
    }
}

/// Reads the lifecycle's requests into the Payments types and renders the answers. No business rules live here.
struct LifecycleHandlers: Sendable {
    let services: MerchantServices

    enum ListOwner { case user, wallet }

    private func id(_ request: Request) -> String { request.parameters["id"] ?? "" }

    private func render(_ payIn: PayIn) -> Response {
        MangopayResponse.json(MangopayWire.payIn(payIn, redirectURL: services.payIns.challengeURL(for: payIn)))
    }

    func createRegistration(_ request: Request, clientId: String) async throws -> Response {
        var body = try MangopayFields(body: request.body)
        var registration = RecurringRegistrationRequest()
        registration.authorId = body.string("AuthorId")
        registration.cardId = body.string("CardId")
        registration.creditedUserId = body.string("CreditedUserId")
        registration.creditedWalletId = body.string("CreditedWalletId")
        registration.firstTransactionDebitedFunds = body.money("FirstTransactionDebitedFunds")
        registration.firstTransactionFees = body.money("FirstTransactionFees")
        registration.nextTransactionDebitedFunds = body.money("NextTransactionDebitedFunds")
        registration.nextTransactionFees = body.money("NextTransactionFees")
        registration.billing = body.party("Billing")
        registration.shipping = body.party("Shipping")
        registration.endDate = body.integer("EndDate")
        registration.frequency = body.string("Frequency")
        registration.fixedNextAmount = body.boolean("FixedNextAmount")
        registration.fractionedPayment = body.boolean("FractionedPayment")
        registration.migration = body.boolean("Migration")
        registration.freeCycles = body.integer("FreeCycles")
        registration.paymentType = body.string("PaymentType")
        registration.tag = body.string("Tag")
        try body.check()
        return MangopayResponse.json(
            MangopayWire.recurringRegistration(
                try await services.payIns.createRecurringRegistration(clientId: clientId, request: registration)))
    }

    func getRegistration(_ request: Request, clientId: String) async throws -> Response {
        MangopayResponse.json(
            MangopayWire.recurringRegistration(
                try await services.payIns.recurringRegistration(clientId: clientId, id: id(request))))
    }

    func updateRegistration(_ request: Request, clientId: String) async throws -> Response {
        var body = try MangopayFields(body: request.body)
        let changes = PayInService.RecurringRegistrationChanges(
            status: body.string("Status"), cardId: body.string("CardId"), billing: body.party("Billing"),
            shipping: body.party("Shipping"))
        try body.check()
        return MangopayResponse.json(
            MangopayWire.recurringRegistration(
                try await services.payIns.updateRecurringRegistration(
                    clientId: clientId, id: id(request), changes: changes)))
    }

    func createRecurringPayIn(_ request: Request, clientId: String) async throws -> Response {
        var body = try MangopayFields(body: request.body)
        var payIn = RecurringPayInRequest(
            recurringPayinRegistrationId: body.string("RecurringPayinRegistrationId"),
            debitedFunds: body.money("DebitedFunds"), fees: body.money("Fees"))
        payIn.details = body.cardValidationRequest()
        try body.check()
        return render(try await services.payIns.createRecurringPayIn(clientId: clientId, request: payIn))
    }

    func createWalletPayIn(_ request: Request, clientId: String, kind: PayInKind) async throws -> Response {
        var body = try MangopayFields(body: request.body)
        var payIn = WalletPayInRequest()
        payIn.details = body.cardValidationRequest()
        payIn.authorId = body.string("AuthorId")
        payIn.creditedUserId = body.string("CreditedUserId")
        payIn.creditedWalletId = body.string("CreditedWalletId")
        payIn.debitedFunds = body.money("DebitedFunds")
        payIn.fees = body.money("Fees")
        switch body.object["PaymentData"] {
        case .string(let token):
            // Google Pay's newer call sends the wallet's token itself as a string.
            payIn.paymentData = WalletPaymentData(tokenData: token)
        default:
            payIn.paymentData = body.object("PaymentData") { data in
                WalletPaymentData(
                    transactionId: data.string("TransactionId"), network: data.string("Network"),
                    tokenData: data.string("TokenData"))
            }
        }
        try body.check()
        return render(try await services.payIns.createWalletPayIn(clientId: clientId, kind: kind, request: payIn))
    }

    func metadata(_ request: Request, clientId: String) throws -> Response {
        var body = try MangopayFields(body: request.body)
        let type = body.string("Type")
        let bin = body.string("Bin")
        let token = body.string("Token")
        try body.check()
        let service = PaymentMethodMetadataService(environment: services.environment)
        return MangopayResponse.json(
            MangopayWire.paymentMethodMetadata(try service.lookUp(type: type, bin: bin, token: token)))
    }

    func transactions(_ request: Request, clientId: String, of owner: ListOwner) async throws -> Response {
        let page = try PageRequest(request)
        let query: FormFields
        do {
            query = try request.query()
        } catch {
            throw PaymentsError.invalid("Query", "The query string is malformed.")
        }
        // The SDK passes its keyword arguments as they are written (`status=FAILED`, `before_date=...`).
        func value(_ names: String...) -> String? { names.lazy.compactMap { query[$0] }.first }
        let filter = try TransactionFilter(
            status: value("Status", "status"), type: value("Type", "type"), nature: value("Nature", "nature"),
            beforeDate: value("BeforeDate", "beforeDate", "before_date"),
            afterDate: value("AfterDate", "afterDate", "after_date"))
        let payIns = services.payIns
        let wallets = services.wallets
        if let refused = try await ScaWire(services: services).walletAccess(
            request, clientId: clientId,
            ownerId: owner == .user
                ? id(request) : try await wallets.get(clientId: clientId, id: id(request)).ownerId)
        {
            return refused
        }
        let found =
            switch owner {
            case .user:
                try await payIns.transactions(clientId: clientId, userId: id(request), filter: filter, page: page)
            case .wallet:
                try await payIns.transactions(clientId: clientId, walletId: id(request), filter: filter, page: page)
            }
        return MangopayResponse.list(found) { MangopayWire.transaction($0, challengeURL: payIns.challengeURL) }
    }

    func categorize(_ request: Request, clientId: String, type: PersonType, sca: Bool) async throws -> Response {
        var body = try MangopayFields(body: request.body)
        let existing = try await services.users.get(clientId: clientId, id: id(request), type: type)
        let changes = body.userFields(type: type, sca: sca || existing.sca)
        try body.check()
        let user = try await services.users.categorize(
            clientId: clientId, id: existing.id, type: type, changes: changes)
        return try await ScaWire(services: services).user(user, opening: existing.userCategory != "OWNER")
    }
}
