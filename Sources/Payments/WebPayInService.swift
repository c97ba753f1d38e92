import CardKit
import Foundation
import VaultCore
import VaultCrypto
import VaultStore

/// Web card pay-ins (`POST /payins/card/web`): the record, the hosted payment page's steps and the extended view.
/// The page's card goes through the same path as `POST /tokenize/…` (a card registration of the author, CardKit
/// checks, the vault), then a direct pay-in with that card carries the 3-D Secure flow and the wallet credit; this
/// record follows its outcome. Every state change writes its event (`PAYIN_NORMAL_*`) in the same batch.
public struct WebPayInService: Sendable {
    let services: MerchantServices

    public init(services: MerchantServices) { self.services = services }

    static let collection = Collections.webPayIns
    /// How long the payment page takes a card after creation (Mangopay's web pay-ins expire after 30 minutes).
    public static let pageLifetimeSeconds: Int64 = 1800

    private var environment: PaymentsEnvironment { services.environment }

    // MARK: Create

    /// Creates a web card pay-in in status CREATED.
    /// - Throws: ``PaymentsError`` `.invalidParameters` naming every wrong field.
    public func create(clientId: String, request: WebPayInRequest) async throws -> WebPayIn {
        var rules = FieldRules()
        rules.required(request.authorId, "AuthorId", maximum: 100)
        rules.required(request.creditedWalletId, "CreditedWalletId", maximum: 100)
        rules.required(request.returnURL, "ReturnURL", maximum: 2000)
        if let url = request.returnURL, !PayInService.isReturnURL(url) {
            rules.fail("ReturnURL", "The ReturnURL must be an absolute http or https URL.")
        }
        rules.funds(request.debitedFunds, "DebitedFunds", allowZero: false)
        rules.funds(request.fees, "Fees", allowZero: true)
        rules.oneOf(request.cardType, CardRegistrationService.cardTypes, "CardType")
        rules.oneOf(request.secureMode, SecureMode.allCases.map(\.rawValue), "SecureMode")
        rules.length(request.tag, "Tag")
        if let culture = request.culture,
            culture.utf8.count != 2
                || !culture.utf8.allSatisfy({ $0 >= 0x41 && $0 <= 0x5A || $0 >= 0x61 && $0 <= 0x7A })
        {
            rules.fail("Culture", "The Culture must be a two-letter language code.")
        }
        if let descriptor = request.statementDescriptor,
            descriptor.isEmpty || descriptor.utf8.count > 10
                || !descriptor.utf8.allSatisfy({
                    Identifier.isIdentifierByte($0) && $0 != 0x5F && $0 != 0x2D || $0 == 0x20
                })
        {
            rules.fail("StatementDescriptor", "The StatementDescriptor must be 1 to 10 letters, digits or spaces.")
        }
        try rules.check()
        guard try await services.users.exists(clientId: clientId, id: request.authorId!) else {
            throw PaymentsError.invalid(
                "AuthorId", "The user \(Identifier.printable(request.authorId!)) does not exist.")
        }
        guard let wallet = try await services.wallets.read(clientId: clientId, id: request.creditedWalletId!)?.value
        else {
            throw PaymentsError.invalid(
                "CreditedWalletId", "The wallet \(Identifier.printable(request.creditedWalletId!)) does not exist.")
        }
        let debited = request.debitedFunds!
        let fees = request.fees!
        rules.credit(of: wallet, debited: debited, fees: fees, creditedUserId: request.creditedUserId)
        try rules.check()
        let now = environment.nowSeconds
        let (expiration, expirationOverflow) = now.addingReportingOverflow(Self.pageLifetimeSeconds)
        let payIn = WebPayIn(
            id: Identifier.make("wpayin_", random: environment.random), clientId: clientId,
            authorId: request.authorId!, creditedUserId: request.creditedUserId ?? wallet.ownerId,
            creditedWalletId: wallet.id, debitedFunds: debited, fees: fees, returnURL: request.returnURL!,
            cardType: request.cardType ?? "CB_VISA_MASTERCARD", secureMode: request.secureMode ?? "DEFAULT",
            culture: request.culture, statementDescriptor: request.statementDescriptor, tag: request.tag,
            pageSecret: Identifier.secret(count: 32, random: environment.random), status: "CREATED", result: nil,
            payInId: nil, cardId: nil, creationDate: now, executionDate: nil,
            expirationDate: expirationOverflow ? Int64.max : expiration)
        var writes: [RecordWrite] = [
            .put(
                collection: Self.collection, id: Identifier.scoped(clientId, payIn.id),
                value: try RecordCoding.encode(payIn), condition: .absent)
        ]
        writes += try await EventLog.writes(
            .payInNormalCreated, resourceId: payIn.id, clientId: clientId, environment: environment)
        try await commit(writes)
        environment.logger.info(
            "web pay-in created", ["clientId": .string(clientId), "transactionId": .string(payIn.id)])
        return payIn
    }

    // MARK: Read

    /// The web pay-in `id` of `clientId`; one whose card pay-in finished meanwhile is brought up to date first.
    public func get(clientId: String, id: String) async throws -> WebPayIn {
        guard let found = try await read(clientId: clientId, id: id) else {
            throw PaymentsError.notFound("PayIn", id: id)
        }
        return try await settle(found)
    }

    func read(clientId: String, id: String) async throws -> Stored<WebPayIn>? {
        guard Identifier.isWellFormed(clientId), Identifier.isWellFormed(id), id.hasPrefix("wpayin_") else {
            return nil
        }
        return try await environment.store.read(WebPayIn.self, Self.collection, id: Identifier.scoped(clientId, id))
    }

    /// The extended view: the card the page tokenized (alias, type, issuing country, fingerprint, expiry).
    public func extended(clientId: String, id: String) async throws -> (WebPayIn, Card?) {
        let payIn = try await get(clientId: clientId, id: id)
        guard let cardId = payIn.cardId else { return (payIn, nil) }
        return (payIn, try await services.cards.read(clientId: clientId, id: cardId)?.value)
    }

    /// The URL of the payment page of `payIn` (nil once final).
    public func pageURL(for payIn: WebPayIn) -> String? {
        guard let secret = payIn.pageSecret, !payIn.isFinal else { return nil }
        return environment.configuration.publicBaseURL + "/payins/web/\(payIn.clientId)/\(payIn.id)?s=\(secret)"
    }

    // MARK: The payment page

    /// The pay-in behind a page link, after checking its secret in constant time.
    /// - Throws: ``PaymentsError`` `.notFound` for an unknown pay-in or a wrong secret (the same answer).
    public func page(clientId: String, id: String, secret: String) async throws -> WebPayInPageView {
        let found = try await authenticated(clientId: clientId, id: id, secret: secret)
        return try await view(try await settle(found))
    }

    private func view(_ payIn: WebPayIn) async throws -> WebPayInPageView {
        let client = try await services.clients.client(payIn.clientId)
        return WebPayInPageView(payIn: payIn, merchantName: client?.name ?? payIn.statementDescriptor ?? "")
    }

    private func authenticated(clientId: String, id: String, secret: String) async throws -> Stored<WebPayIn> {
        guard let found = try await read(clientId: clientId, id: id), let expected = found.value.pageSecret,
            ConstantTime.equals(Array(expected.utf8), Array(secret.utf8))
        else { throw PaymentsError(.notFound, "This payment link is not valid") }
        return found
    }

    /// The shopper submitted a card: tokenize it for the author, pay with it, and continue at the ACS page when
    /// the issuer asks for a challenge, else back at the merchant.
    public func pay(
        clientId: String, id: String, secret: String, card: WebPayInCardInput, signals: DeviceSignals,
        browserInfo: BrowserInfo
    ) async throws -> WebPayInStep {
        let found = try await authenticated(clientId: clientId, id: id, secret: secret)
        let payIn = try await settle(found)
        if payIn.isFinal { return .redirect(PayInService.returnURL(payIn.returnURL, transactionId: payIn.id)) }
        if payIn.payInId != nil {
            // Already paying (for example the shopper went back): continue where the card pay-in is.
            return try await resume(clientId: clientId, id: id, secret: secret)
        }
        if environment.nowSeconds >= payIn.expirationDate {
            let final = try await finish(
                found, status: "FAILED", result: ResultCode(code: "001999", message: "Generic Operation error"),
                payInId: nil, cardId: nil)
            return .redirect(PayInService.returnURL(final.returnURL, transactionId: final.id))
        }
        var errors = Self.check(card)
        if !errors.isEmpty { return .form(try await view(payIn), errors: errors) }

        let registration = try await services.cardRegistrations.create(
            clientId: clientId, userId: payIn.authorId, currency: payIn.debitedFunds.currency,
            cardType: payIn.cardType, tag: "web pay-in " + payIn.id)
        let expiry = card.expiry.filter(\.isNumber)
        let result = try await services.cardRegistrations.tokenize(
            clientId: clientId, id: registration.id,
            form: TokenizationForm(
                data: registration.preregistrationData, accessKeyRef: registration.accessKey,
                cardNumber: card.number.unsafeRevealed.filter(\.isNumber), cardExpirationDate: expiry,
                cardCvx: card.securityCode.unsafeRevealed),
            signals: signals)
        let token: String
        switch result {
        case .success(let data, _):
            token = data.unsafeRevealed
        case .failure(let code):
            switch code {
            case .invalidCardNumber: errors.append(("cardNumber", "the card number is not valid"))
            case .invalidExpiry: errors.append(("expiry", "the expiry date is not valid or the card has expired"))
            case .invalidSecurityCode: errors.append(("securityCode", "the security code is not valid for this card"))
            case .accessDenied, .locked, .delayExceeded:
                throw PaymentsError(.invalidState, "The card could not be registered; try again")
            }
            return .form(try await view(payIn), errors: errors)
        case .rateLimited:
            return .form(
                try await view(payIn), errors: [("cardNumber", "too many attempts; wait a minute and try again")])
        }
        let completed = try await services.cardRegistrations.update(
            clientId: clientId, id: registration.id, registrationData: "data=" + token,
            cardHolderName: String(card.holderName.prefix(255)), tag: nil)
        guard let cardId = completed.cardId else {
            throw PaymentsError(.invalidState, "The card could not be registered; try again")
        }
        let shown = try await view(payIn)
        var direct = PayInRequest()
        direct.authorId = payIn.authorId
        direct.creditedUserId = payIn.creditedUserId
        direct.creditedWalletId = payIn.creditedWalletId
        direct.debitedFunds = payIn.debitedFunds
        direct.fees = payIn.fees
        direct.cardId = cardId
        direct.secureMode = payIn.secureMode
        direct.secureModeReturnURL =
            environment.configuration.publicBaseURL + "/payins/web/\(clientId)/\(payIn.id)/return?s=\(secret)"
        direct.ipAddress = signals.ipAddress.flatMap { PayInService.isIPAddress($0) ? $0 : nil } ?? "127.0.0.1"
        direct.browserInfo = browserInfo
        direct.statementDescriptor = payIn.statementDescriptor
        direct.culture = payIn.culture
        direct.tag = "web pay-in " + payIn.id
        direct.challengeDisplay = ChallengeDisplay(
            amount: payIn.debitedFunds, merchantName: shown.merchantName.isEmpty ? nil : shown.merchantName,
            locale: payIn.culture)
        let charged = try await services.payIns.create(clientId: clientId, request: direct)
        // Remember the card pay-in first: a second submission continues it instead of charging again.
        let linked = try await link(found, payInId: charged.id, cardId: cardId)
        if let challenge = services.payIns.challengeURL(for: charged), !charged.machine.state.isFinal {
            return .redirect(challenge)
        }
        let final = try await settle(linked)
        return .redirect(PayInService.returnURL(final.returnURL, transactionId: final.id))
    }

    /// Back from the ACS page (or a repeated submission): bring the record up to date, then back to the merchant.
    public func resume(clientId: String, id: String, secret: String) async throws -> WebPayInStep {
        let found = try await authenticated(clientId: clientId, id: id, secret: secret)
        let payIn = try await settle(found)
        if !payIn.isFinal, let payInId = payIn.payInId {
            let charged = try await services.payIns.get(clientId: clientId, id: payInId)
            if let challenge = services.payIns.challengeURL(for: charged), !charged.machine.state.isFinal {
                return .redirect(challenge)
            }
        }
        if !payIn.isFinal && payIn.payInId == nil { return .form(try await view(payIn), errors: []) }
        return .redirect(PayInService.returnURL(payIn.returnURL, transactionId: payIn.id))
    }

    /// The shopper gave up on the page before paying: FAILED (`101002`, cancelled by the user), back to the
    /// merchant. Once a card pay-in runs, its own outcome stands (the ACS page has its own cancel).
    public func cancel(clientId: String, id: String, secret: String) async throws -> WebPayInStep {
        let found = try await authenticated(clientId: clientId, id: id, secret: secret)
        if !found.value.isFinal && found.value.payInId == nil {
            let final = try await finish(
                found, status: "FAILED",
                result: ResultCode(code: "101002", message: "The transaction has been cancelled by the user"),
                payInId: nil, cardId: nil)
            return .redirect(PayInService.returnURL(final.returnURL, transactionId: final.id))
        }
        return try await resume(clientId: clientId, id: id, secret: secret)
    }

    /// The card fields' own checks (CardKit), as sentences next to their fields.
    static func check(_ card: WebPayInCardInput) -> [(String, String)] {
        var errors: [(String, String)] = []
        let digits = card.number.unsafeRevealed.filter { $0 != " " && $0 != "-" }
        if digits.isEmpty {
            errors.append(("cardNumber", "enter the card number"))
        } else if !digits.allSatisfy(\.isNumber) || !(12...19).contains(digits.count) {
            errors.append(("cardNumber", "the card number must be 12 to 19 digits"))
        }
        let expiry = card.expiry.filter(\.isNumber)
        if expiry.isEmpty {
            errors.append(("expiry", "enter the expiry date (MM/YY)"))
        } else if expiry.count != 4 {
            errors.append(("expiry", "enter the expiry date as MM/YY"))
        }
        if card.securityCode.unsafeRevealed.isEmpty { errors.append(("securityCode", "enter the security code")) }
        if card.holderName.trimmingCharacters(in: .whitespaces).isEmpty {
            errors.append(("cardHolderName", "enter the name printed on the card"))
        } else if card.holderName.count > 100 {
            errors.append(("cardHolderName", "the cardholder name must be at most 100 characters"))
        }
        return errors
    }

    // MARK: State changes

    /// Records the card pay-in that charges this web pay-in (no event: the status does not change).
    private func link(_ found: Stored<WebPayIn>, payInId: String, cardId: String) async throws -> Stored<WebPayIn> {
        var payIn = found.value
        payIn.payInId = payInId
        payIn.cardId = cardId
        let version = try await commit([
            .put(
                collection: Self.collection, id: Identifier.scoped(payIn.clientId, payIn.id),
                value: try RecordCoding.encode(payIn), condition: .version(found.version))
        ])
        return Stored(value: payIn, version: version)
    }

    /// `found` brought up to date with its card pay-in: final (with its event) once that one is.
    private func settle(_ found: Stored<WebPayIn>) async throws -> WebPayIn {
        let payIn = found.value
        guard !payIn.isFinal, let payInId = payIn.payInId else { return payIn }
        let charged = try await services.payIns.get(clientId: payIn.clientId, id: payInId)
        switch charged.machine.state {
        case .succeeded:
            return try await finish(found, status: "SUCCEEDED", result: nil, payInId: payInId, cardId: payIn.cardId)
        case .failed(let result):
            return try await finish(found, status: "FAILED", result: result, payInId: payInId, cardId: payIn.cardId)
        case .created, .awaitingChallenge:
            return payIn
        }
    }

    /// Moves `found` to its final status with its event, in one batch; a concurrent mover wins and its state is
    /// returned.
    private func finish(
        _ found: Stored<WebPayIn>, status: String, result: ResultCode?, payInId: String?, cardId: String?
    ) async throws -> WebPayIn {
        var payIn = found.value
        payIn.status = status
        payIn.result = status == "SUCCEEDED" ? ResultCode(code: "000000", message: "Success") : result
        payIn.executionDate = status == "SUCCEEDED" ? environment.nowSeconds : nil
        payIn.payInId = payInId
        payIn.cardId = cardId
        var writes: [RecordWrite] = [
            .put(
                collection: Self.collection, id: Identifier.scoped(payIn.clientId, payIn.id),
                value: try RecordCoding.encode(payIn), condition: .version(found.version))
        ]
        writes += try await EventLog.writes(
            status == "SUCCEEDED" ? .payInNormalSucceeded : .payInNormalFailed, resourceId: payIn.id,
            clientId: payIn.clientId, environment: environment)
        do {
            _ = try await commit(writes)
        } catch let error as StoreError where error.code == .conflict {
            if let now = try await read(clientId: payIn.clientId, id: payIn.id)?.value { return now }
            throw error
        }
        environment.logger.info(
            "web pay-in completed",
            [
                "clientId": .string(payIn.clientId), "transactionId": .string(payIn.id), "status": .string(status),
                "resultCode": .string(payIn.result?.code ?? ""),
            ])
        return payIn
    }

    @discardableResult
    private func commit(_ writes: [RecordWrite]) async throws -> UInt64 {
        let versions = try await environment.store.commit(writes)
        return versions.first ?? 0
    }
}
