import Foundation
public import HTTPServer
public import Payments

/// Web card pay-ins in the Mangopay dialect: `POST /payins/card/web` (answers the hosted payment page's
/// `RedirectURL`) and `GET /payins/card/web/{id}/extended`. `GET /payins/{id}` shows them too (``PayInHandlers``).
/// The payment page itself is MasterpassAPI's `WebPayInPageRoutes`, built from the hosted checkout's parts.
public struct WebPayInRoutes: RouteGroup {
    public let services: MerchantServices

    public init(services: MerchantServices) {
        self.services = services
    }

    public func register(on router: inout Router) {
        let api = MangopayHandlers(services: services, checkoutOrigins: [])
        let webPayIns = WebPayInService(services: services)
        let base = "/v2.01/:clientId"
        router.post(base + "/payins/card/web") { request in
            await api.authorized(request, idempotent: true) { clientId in
                var body = try MangopayFields(body: request.body)
                let input = body.webPayInRequest()
                try body.check()
                let payIn = try await webPayIns.create(clientId: clientId, request: input)
                return MangopayResponse.json(MangopayWire.webPayIn(payIn, redirectURL: webPayIns.pageURL(for: payIn)))
            }
        }
        router.get(base + "/payins/card/web/:id/extended") { request in
            await api.authorized(request) { clientId in
                let (payIn, card) = try await webPayIns.extended(clientId: clientId, id: request.parameters["id"] ?? "")
                return MangopayResponse.json(MangopayWire.extendedWebPayIn(payIn, card: card))
            }
        }
    }
}

extension MangopayFields {
    /// A `POST /payins/card/web` body.
    mutating func webPayInRequest() -> WebPayInRequest {
        var request = WebPayInRequest()
        request.authorId = string("AuthorId")
        request.creditedUserId = string("CreditedUserId")
        request.creditedWalletId = string("CreditedWalletId")
        request.debitedFunds = money("DebitedFunds")
        request.fees = money("Fees")
        request.returnURL = string("ReturnURL")
        request.cardType = string("CardType")
        request.secureMode = string("SecureMode")
        request.culture = string("Culture")
        request.statementDescriptor = string("StatementDescriptor")
        request.tag = string("Tag")
        return request
    }
}

extension MangopayWire {
    /// A web card pay-in as Mangopay shows it (`ExecutionType` WEB, `RedirectURL` while the page takes a card).
    static func webPayIn(_ payIn: WebPayIn, redirectURL: String?) -> MangopayJSON {
        .object([
            ("Id", .string(payIn.id)), ("Tag", .text(payIn.tag)), ("CreationDate", .int(payIn.creationDate)),
            ("AuthorId", .string(payIn.authorId)), ("CreditedUserId", .text(payIn.creditedUserId)),
            ("DebitedFunds", funds(payIn.debitedFunds)), ("CreditedFunds", funds(payIn.creditedFunds)),
            ("Fees", funds(payIn.fees)), ("Status", .string(payIn.status)), ("ResultCode", .text(payIn.result?.code)),
            ("ResultMessage", .text(payIn.result?.message)), ("ExecutionDate", .integer(payIn.executionDate)),
            ("Type", .string("PAYIN")), ("Nature", .string("REGULAR")),
            ("CreditedWalletId", .string(payIn.creditedWalletId)), ("DebitedWalletId", .null),
            ("PaymentType", .string("CARD")), ("ExecutionType", .string("WEB")),
            ("RedirectURL", .text(redirectURL)), ("ReturnURL", .string(payIn.returnURL)),
            ("TemplateURL", .null), ("TemplateURLOptions", .null), ("Culture", .text(payIn.culture)),
            ("CardType", .string(payIn.cardType)), ("SecureMode", .string(payIn.secureMode)),
            ("StatementDescriptor", .text(payIn.statementDescriptor)), ("CardId", .text(payIn.cardId)),
        ])
    }

    /// The last second (UTC) of a card's `MMYY` expiry month, as Unix seconds: the SDK reads `ExpirationDate` as a
    /// date.
    static func cardExpiry(_ mmyy: String) -> Int64? {
        guard mmyy.utf8.count == 4, let month = Int(mmyy.prefix(2)), let year = Int(mmyy.suffix(2)),
            (1...12).contains(month)
        else { return nil }
        var components = DateComponents()
        components.calendar = Calendar(identifier: .gregorian)
        components.timeZone = TimeZone(identifier: "UTC")
        components.year = 2000 + year + (month == 12 ? 1 : 0)
        components.month = month == 12 ? 1 : month + 1
        components.day = 1
        guard let next = components.date else { return nil }
        return Int64(next.timeIntervalSince1970) - 1
    }

    /// `GET /payins/card/web/{id}/extended`: the card the page took (null members before the shopper paid).
    static func extendedWebPayIn(_ payIn: WebPayIn, card: Card?) -> MangopayJSON {
        .object([
            ("Id", .string(payIn.id)), ("PaymentType", .string("CARD")), ("ExecutionType", .string("WEB")),
            ("ExpirationDate", .integer(card.flatMap { cardExpiry($0.expirationDate) })), ("Alias", .text(card?.alias)),
            ("CardType", .text(card?.cardType)), ("CardProvider", .text(card?.cardProvider)),
            ("Country", .text(card?.country)), ("Fingerprint", .text(card?.fingerprint)),
            ("CardId", .text(card?.id)),
        ])
    }
}
