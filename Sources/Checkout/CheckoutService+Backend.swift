import CardKit
import Foundation
import VaultCore
import VaultCrypto
import VaultStore

/// The fields of `POST /masterpass/postback`, as sent (every one optional here so that a missing one is a clear
/// 400, not a decoding failure).
public struct MasterpassPostbackInput: Sendable, Equatable {
    public var transactionId: String?
    public var checkoutId: String?
    public var currency: String?
    /// The amount as decimal text in major units (`12.55`).
    public var amount: String?
    public var paymentSuccessful: Bool?
    public var paymentCode: String?
    public var paymentDate: String?
    public var preCheckoutTransactionId: String?

    public init(
        transactionId: String? = nil, checkoutId: String? = nil, currency: String? = nil, amount: String? = nil,
        paymentSuccessful: Bool? = nil, paymentCode: String? = nil, paymentDate: String? = nil,
        preCheckoutTransactionId: String? = nil
    ) {
        self.transactionId = transactionId
        self.checkoutId = checkoutId
        self.currency = currency
        self.amount = amount
        self.paymentSuccessful = paymentSuccessful
        self.paymentCode = paymentCode
        self.paymentDate = paymentDate
        self.preCheckoutTransactionId = preCheckoutTransactionId
    }
}

/// The fields of `POST /masterpass/expresscheckout`.
public struct MasterpassExpressCheckoutInput: Sendable, Equatable {
    public var checkoutId: String?
    public var pairingId: String?
    public var preCheckoutTransactionId: String?
    public var amount: String?
    public var currency: String?
    public var cardId: String?
    public var shippingAddressId: String?
    public var digitalGoods: Bool?
    public var unpredictableNumber: String?
    public var validityPeriodMinutes: String?

    public init(
        checkoutId: String? = nil, pairingId: String? = nil, preCheckoutTransactionId: String? = nil,
        amount: String? = nil, currency: String? = nil, cardId: String? = nil, shippingAddressId: String? = nil,
        digitalGoods: Bool? = nil, unpredictableNumber: String? = nil, validityPeriodMinutes: String? = nil
    ) {
        self.checkoutId = checkoutId
        self.pairingId = pairingId
        self.preCheckoutTransactionId = preCheckoutTransactionId
        self.amount = amount
        self.currency = currency
        self.cardId = cardId
        self.shippingAddressId = shippingAddressId
        self.digitalGoods = digitalGoods
        self.unpredictableNumber = unpredictableNumber
        self.validityPeriodMinutes = validityPeriodMinutes
    }
}

extension CheckoutService {
    // MARK: - Payment data

    /// The payment data of transaction `transactionId`, for its owner only, until the cryptogram expires. Every
    /// call that reaches a transaction is audited.
    /// - Throws: ``CheckoutError`` `.invalidRequest` (missing or malformed fields, cartId mismatch),
    ///   `.authorizationFailed` (checkoutId not this client's), `.notFound`, `.invalidState` (not completed),
    ///   `.expired`.
    public func paymentData(
        clientId: String, transactionId: String?, checkoutId: String?, cartId: String?
    )
        async throws -> MasterpassPaymentData
    {
        var errors = CheckoutFieldErrors()
        Self.requireId(transactionId, "transactionId", &errors)
        if (checkoutId ?? "").isEmpty { errors.add("checkoutId", "checkoutId is required") }
        if (cartId ?? "").isEmpty { errors.add("cartId", "cartId is required") }
        try errors.check()
        let registration = try await ownedRegistration(clientId: clientId, checkoutId: checkoutId)
        guard let transactionId,
            let session = try await transactionSession(clientId: clientId, transactionId: transactionId),
            session.request.checkoutId == registration.checkoutId
        else { throw CheckoutError.notFound("transaction") }
        func refuse(_ outcome: PaymentDataAccess.Outcome, _ error: CheckoutError) async throws -> Never {
            try await audit(session, outcome: outcome, operation: "paymentdata")
            throw error
        }
        guard session.request.cartId == cartId else {
            try await refuse(
                .refusedCartMismatch, CheckoutError.invalid("cartId", "cartId does not match the checkout"))
        }
        guard let payment = session.payment else {
            try await refuse(
                .refusedNotComplete, CheckoutError(.invalidState, "The shopper has not completed this checkout"))
        }
        guard nowSeconds < payment.expiresAt else {
            try await refuse(
                .refusedExpired, CheckoutError(.expired, "The payment data and its cryptogram have expired"))
        }
        return try await serve(payment.data, cardId: payment.cardId, session: session, operation: "paymentdata")
    }

    /// The audit records of `transactionId` of `clientId`, oldest first.
    public func paymentDataAccesses(clientId: String, transactionId: String) async throws -> [PaymentDataAccess] {
        try await read([PaymentDataAccess].self, Collection.audit, id: scoped(clientId, transactionId))?.value
            ?? []
    }

    /// Puts the card number in for PCI-compliant clients, audits, and returns.
    func serve(
        _ data: MasterpassPaymentData, cardId: String, session: CheckoutSession, operation: String
    )
        async throws -> MasterpassPaymentData
    {
        var served = data
        let merchant = try await merchant(clientId: session.clientId)
        if merchant.pciCompliant {
            served.card.accountNumber = try await vault.accountNumber(clientId: session.clientId, cardId: cardId)
                .unsafeRevealed
        }
        try await audit(
            session, outcome: merchant.pciCompliant ? .servedAccountNumber : .servedToken, operation: operation)
        return served
    }

    func audit(_ session: CheckoutSession, outcome: PaymentDataAccess.Outcome, operation: String) async throws {
        let access = PaymentDataAccess(
            clientId: session.clientId, transactionId: session.transactionId, checkoutId: session.request.checkoutId,
            at: clock.now.millisecondsSince1970, outcome: outcome, operation: operation)
        let id = scoped(session.clientId, session.transactionId)
        // One record per transaction holds its reads in order; concurrent reads retry on the version.
        return try await retryingOnConflict(
            attempts: 8, exhausted: CheckoutError(.unavailable, "The audit could not be written; retry")
        ) {
            let existing = try await read([PaymentDataAccess].self, Collection.audit, id: id)
            try await store.put(
                Collection.audit, id: id, value: try Self.encode((existing?.value ?? []) + [access]),
                condition: existing.map { .version($0.version) } ?? .absent)
            logger.notice(
                "payment data read",
                [
                    "clientId": .string(session.clientId), "transactionId": .string(session.transactionId),
                    "outcome": .string(outcome.rawValue), "operation": .string(operation),
                ])
            return
        }
    }

    func transactionSession(clientId: String, transactionId: String) async throws -> CheckoutSession? {
        guard CheckoutIdentifiers.isWellFormed(transactionId),
            let pointer = try await store.get(Collection.transactions, id: scoped(clientId, transactionId))
        else { return nil }
        let sessionId = String(decoding: pointer.value, as: UTF8.self)
        return try await loadSession(sessionId)?.value
    }

    // MARK: - Postback

    /// Records the merchant's payment result. A repeat of the same postback is accepted again.
    /// - Throws: ``CheckoutError`` `.invalidRequest` (missing or malformed fields), `.authorizationFailed`
    ///   (checkoutId not this client's), `.notFound`, `.invalidState` (not completed, or a different postback
    ///   was recorded).
    public func postback(clientId: String, _ input: MasterpassPostbackInput) async throws {
        var errors = CheckoutFieldErrors()
        Self.requireId(input.transactionId, "transactionId", &errors)
        if (input.checkoutId ?? "").isEmpty { errors.add("checkoutId", "checkoutId is required") }
        var currency: Currency?
        if let code = input.currency, !code.isEmpty {
            currency = Currency(code: code)
            if currency == nil { errors.add("currency", "currency must be an ISO 4217 code such as USD") }
        } else {
            errors.add("currency", "currency is required")
        }
        var amount: Money?
        if let text = input.amount, !text.isEmpty {
            amount = CheckoutRequest.amount(text, currency: currency, errors: &errors)
        } else {
            errors.add("amount", "amount is required")
        }
        if input.paymentSuccessful == nil {
            errors.add("paymentSuccessful", "paymentSuccessful (true or false) is required")
        }
        if let code = input.paymentCode, !code.isEmpty,
            !(code.utf8.count <= 20
                && code.utf8.allSatisfy({ CheckoutCallbackURL.isAlpha($0) || CheckoutCallbackURL.isDigit($0) }))
        {
            errors.add("paymentCode", "paymentCode must be the approval code: at most 20 letters and digits")
        }
        if let date = input.paymentDate, !date.isEmpty, Self.parseISODate(date) == nil {
            errors.add("paymentDate", "paymentDate must be an ISO 8601 date and time such as 2026-01-01T12:00:00Z")
        }
        try errors.check()
        let registration = try await ownedRegistration(clientId: clientId, checkoutId: input.checkoutId)
        guard let transactionId = input.transactionId,
            let pointer = try await store.get(Collection.transactions, id: scoped(clientId, transactionId)),
            let loaded = try await loadSession(String(decoding: pointer.value, as: UTF8.self)),
            loaded.value.request.checkoutId == registration.checkoutId
        else { throw CheckoutError.notFound("transaction") }
        let version = loaded.version
        var session = loaded.value
        guard var payment = session.payment, let amount, let success = input.paymentSuccessful else {
            throw CheckoutError(.invalidState, "The shopper has not completed this checkout")
        }
        let postback = MasterpassPostback(
            transactionId: transactionId, checkoutId: registration.checkoutId, currency: amount.currency.code,
            amountMinorUnits: amount.minorUnits, paymentSuccessful: success, paymentCode: input.paymentCode,
            paymentDate: input.paymentDate, preCheckoutTransactionId: input.preCheckoutTransactionId)
        if let earlier = payment.postback {
            guard earlier == postback else {
                throw CheckoutError(.invalidState, "A different postback was recorded for this transaction")
            }
            return
        }
        payment.postback = postback
        session.payment = payment
        try await write(
            Collection.sessions, id: sessionRecordId(session.sessionId), session, condition: .version(version))
        logger.info(
            "postback recorded",
            ["transactionId": .string(transactionId), "paymentSuccessful": .bool(success)])
    }

    // MARK: - Pairing

    /// Creates the pairing transaction of a completed checkout. The card and addresses wait in it: they reach the
    /// shopper's wallet only when the merchant redeems the pairing for this user (``pairingId(clientId:pairingTransactionId:userId:)``),
    /// and are gone with the pairing transaction when it expires unredeemed.
    func createPairingTransaction(
        clientId: String, userId: String, transactionId: String, submission: CheckoutSubmission
    ) async throws -> String {
        let pairing = PairingTransaction(
            pairingTransactionId: CheckoutIdentifiers.make("mppt", random: random), clientId: clientId, userId: userId,
            transactionId: transactionId,
            expiresAt: nowSeconds + Int64(configuration.pairingTransactionLifetimeSeconds), redeemed: false,
            submission: submission)
        try await store.commit([
            .put(
                collection: Collection.pairingTransactions, id: scoped(clientId, pairing.pairingTransactionId),
                value: try Self.encode(pairing), condition: .absent)
        ])
        return pairing.pairingTransactionId
    }

    /// The wallet `userId` paired with `clientId`, or nil.
    public func wallet(clientId: String, userId: String) async throws -> PairingWallet? {
        guard CheckoutRequest.isUserId(userId) else { return nil }
        return try await read(PairingWallet.self, Collection.wallets, id: scoped(clientId, userId))?.value
    }

    /// Exchanges a pairing transaction id (the callback's `pairing_verifier`) and the merchant's `userId` for a
    /// pairing id, once.
    /// - Throws: ``CheckoutError`` `.invalidRequest`, `.notFound` (unknown, another client's, or another user's),
    ///   `.expired`, `.invalidState` (already exchanged).
    public func pairingId(clientId: String, pairingTransactionId: String?, userId: String?) async throws -> String {
        var errors = CheckoutFieldErrors()
        Self.requireId(pairingTransactionId, "pairingTransactionId", &errors)
        if let userId, !userId.isEmpty {
            if !CheckoutRequest.isUserId(userId) {
                errors.add("userId", "userId must be 1 to 100 characters of letters, digits and . _ @ + -")
            }
        } else {
            errors.add("userId", "userId is required")
        }
        try errors.check()
        guard let pairingTransactionId, let userId,
            let storedPairing = try await read(
                PairingTransaction.self, Collection.pairingTransactions, id: scoped(clientId, pairingTransactionId)
            ),
            storedPairing.value.userId == userId
        else { throw CheckoutError.notFound("pairing transaction") }
        let pairing = storedPairing.value
        let pairingVersion = storedPairing.version
        guard !pairing.redeemed else {
            throw CheckoutError(.invalidState, "This pairing transaction was exchanged already")
        }
        guard nowSeconds < pairing.expiresAt else {
            throw CheckoutError(.expired, "The pairing transaction has expired")
        }
        // Only now, with the merchant vouching for the user, do the checkout's card and addresses reach the wallet.
        let storedWallet = try await read(PairingWallet.self, Collection.wallets, id: scoped(clientId, userId))
        var wallet =
            storedWallet?.value
            ?? PairingWallet(
                clientId: clientId, userId: userId, walletId: CheckoutIdentifiers.make("wal", random: random),
                cards: [], shippingAddresses: [], personalInfo: nil, pairingId: nil, preCheckoutTransactionId: nil)
        if let submission = pairing.submission {
            wallet.add(submission) { CheckoutIdentifiers.make("adr", random: random) }
        }
        let walletVersion = storedWallet?.version
        var redeemed = pairing
        redeemed.redeemed = true
        redeemed.submission = nil
        let (_, pairingId) = try await rotate(
            wallet, version: walletVersion,
            extra: [
                .put(
                    collection: Collection.pairingTransactions, id: scoped(clientId, pairingTransactionId),
                    value: try Self.encode(redeemed), condition: .version(pairingVersion))
            ])
        logger.info("pairing established", ["clientId": .string(clientId)])
        return pairingId
    }

    /// The masked contents of a paired wallet, with a new pairing id (the old one stops working).
    /// - Throws: ``CheckoutError`` `.invalidRequest`, `.notFound`.
    public func preCheckoutData(clientId: String, pairingId: String?) async throws -> MasterpassPreCheckoutData {
        var errors = CheckoutFieldErrors()
        Self.requireId(pairingId, "pairingId", &errors)
        try errors.check()
        let (wallet, version) = try await pairedWallet(clientId: clientId, pairingId: pairingId ?? "")
        var updated = wallet
        let preCheckoutId = CheckoutIdentifiers.make("mppc", random: random)
        updated.preCheckoutTransactionId = preCheckoutId
        let (rotated, newPairingId) = try await rotate(updated, version: version, extra: [])
        return MasterpassPreCheckoutData(
            cards: rotated.cards.map { saved in
                let type = MasterpassCardType(brand: saved.card.brand) ?? .master
                return MasterpassPreCheckoutCard(
                    brandId: type.rawValue, brandName: type.brandName, cardHolderName: saved.cardHolderName,
                    cardId: saved.cardId, isDefault: saved.isDefault,
                    expiryMonth: Self.twoDigits(saved.card.expiryMonth),
                    expiryYear: Self.twoDigits(saved.card.expiryYear % 100), lastFour: saved.card.lastFour)
            },
            shippingAddresses: rotated.shippingAddresses.map { saved in
                let address = saved.address
                return MasterpassPreCheckoutShippingAddress(
                    addressId: saved.addressId, line1: address.line1, line2: address.line2, line3: address.line3,
                    line4: address.line4, line5: address.line5, city: address.city, subdivision: address.subdivision,
                    postalCode: address.postalCode, country: address.country, recipientInfo: saved.recipient,
                    isDefault: saved.isDefault)
            },
            contactInfo: rotated.personalInfo, preCheckoutTransactionId: preCheckoutId,
            consumerWalletId: rotated.walletId, pairingId: newPairingId, walletName: configuration.walletName)
    }

    /// Payment data for a paired wallet's card without the hosted page; the pairing id rotates.
    /// - Throws: ``CheckoutError`` `.invalidRequest`, `.authorizationFailed`, `.notFound`.
    public func expressCheckout(
        clientId: String, _ input: MasterpassExpressCheckoutInput
    ) async throws
        -> MasterpassPaymentData
    {
        var errors = CheckoutFieldErrors()
        if (input.checkoutId ?? "").isEmpty { errors.add("checkoutId", "checkoutId is required") }
        Self.requireId(input.pairingId, "pairingId", &errors)
        Self.requireId(input.cardId, "cardId", &errors)
        if let pre = input.preCheckoutTransactionId, !pre.isEmpty, !CheckoutIdentifiers.isWellFormed(pre) {
            errors.add("preCheckoutTransactionId", "preCheckoutTransactionId is not a valid id")
        }
        if input.digitalGoods != true {
            Self.requireId(input.shippingAddressId, "shippingAddressId", &errors)
        }
        // Amount, currency and the cryptogram options go through the checkout request's own rules.
        var items: [(String, String)] = [
            ("checkoutId", input.checkoutId ?? ""), ("cartId", "express"), ("allowedCardTypes", "master"),
        ]
        if let amount = input.amount { items.append(("amount", amount)) }
        if let currency = input.currency { items.append(("currency", currency)) }
        if let number = input.unpredictableNumber { items.append(("unpredictableNumber", number)) }
        if let minutes = input.validityPeriodMinutes { items.append(("validityPeriodMinutes", minutes)) }
        var request: CheckoutRequest?
        do {
            request = try CheckoutRequest(queryItems: items)
        } catch {
            for field in error.fieldErrors where field.field != "checkoutId" { errors.add(field.field, field.message) }
        }
        try errors.check()
        guard var request else { throw CheckoutError.invalid("amount", "amount is required") }
        let registration = try await ownedRegistration(clientId: clientId, checkoutId: input.checkoutId)
        let (wallet, walletVersion) = try await pairedWallet(clientId: clientId, pairingId: input.pairingId ?? "")
        if let pre = input.preCheckoutTransactionId, !pre.isEmpty, pre != wallet.preCheckoutTransactionId {
            errors.add(
                "preCheckoutTransactionId", "preCheckoutTransactionId is not the latest precheckout of this pairing")
        }
        let saved = wallet.cards.first { $0.cardId == input.cardId }
        if saved == nil {
            errors.add("cardId", "cardId is not a card of this pairing")
        } else if let type = MasterpassCardType(brand: saved!.card.brand), !registration.allowedCardTypes.contains(type)
        {
            errors.add("cardId", "this card's type is not accepted by the checkoutId")
        }
        var shipping: CheckoutSavedAddress?
        if input.digitalGoods != true {
            shipping = wallet.shippingAddresses.first { $0.addressId == input.shippingAddressId }
            if shipping == nil {
                errors.add("shippingAddressId", "shippingAddressId is not an address of this pairing")
            }
        }
        try errors.check()
        guard let saved else { throw CheckoutError.notFound("card") }
        request.cartId = input.preCheckoutTransactionId ?? wallet.preCheckoutTransactionId ?? "express"
        request.allowedCardTypes = registration.allowedCardTypes
        request.suppress3DS = true
        request.suppressShippingAddress = input.digitalGoods == true
        request.userId = wallet.userId
        let submission = CheckoutSubmission(
            card: saved.card, cardHolderName: saved.cardHolderName, billingAddress: saved.billingAddress,
            shippingAddress: shipping?.address, personalInfo: shipping?.recipient ?? wallet.personalInfo,
            pairingConsent: false)
        var session = CheckoutSession(
            sessionId: CheckoutIdentifiers.secret(count: 32, random: random),
            transactionId: CheckoutIdentifiers.make("mptx", random: random), clientId: clientId, request: request,
            callback: registration.defaultCallback, merchantName: registration.merchantName,
            machine: CheckoutSessionStateMachine(
                expiresAt: clock.now.addingTimeInterval(TimeInterval(configuration.sessionLifetimeSeconds)),
                suppress3DS: true, pairingPossible: false),
            createdAt: nowSeconds, savedCards: [], pairingTransactionId: nil, payment: nil, problem: nil, express: true)
        _ = try apply(.submit(submission, at: clock.now), to: &session)
        _ = try apply(.authenticationSkipped(at: clock.now), to: &session)
        var payment = issuePayment(
            session: session, submission: submission, authentication: nil, authenticationId: nil, pairingId: nil)
        var updated = wallet
        updated.preCheckoutTransactionId = nil
        let newPairingId = CheckoutIdentifiers.make("mppair", random: random)
        payment.data.pairingId = newPairingId
        session.payment = payment
        try await rotate(
            updated, version: walletVersion, newPairingId: newPairingId,
            extra: [
                .put(
                    collection: Collection.sessions, id: sessionRecordId(session.sessionId),
                    value: try Self.encode(session),
                    condition: .absent),
                .put(
                    collection: Collection.transactions, id: scoped(clientId, session.transactionId),
                    value: Array(session.sessionId.utf8), condition: .absent),
            ])
        return try await serve(payment.data, cardId: saved.cardId, session: session, operation: "expresscheckout")
    }

    /// The wallet a current pairing id points at.
    func pairedWallet(clientId: String, pairingId: String) async throws -> (PairingWallet, UInt64) {
        guard CheckoutIdentifiers.isWellFormed(pairingId),
            let pointer = try await read(
                PairingPointer.self, Collection.pairings, id: scoped(clientId, pairingId)),
            let wallet = try await read(
                PairingWallet.self, Collection.wallets, id: scoped(clientId, pointer.value.userId)),
            wallet.value.pairingId == pairingId
        else { throw CheckoutError.notFound("pairing") }
        return (wallet.value, wallet.version)
    }

    /// Gives `wallet` a new pairing id, retiring the old one, in one atomic write with `extra`. A nil `version`
    /// creates the wallet.
    @discardableResult
    func rotate(
        _ wallet: PairingWallet, version: UInt64?, newPairingId: String? = nil, extra: [RecordWrite]
    )
        async throws
        -> (PairingWallet, String)
    {
        var updated = wallet
        let pairingId = newPairingId ?? CheckoutIdentifiers.make("mppair", random: random)
        updated.pairingId = pairingId
        var writes = extra
        if let old = wallet.pairingId {
            writes.append(
                .delete(
                    collection: Collection.pairings, id: scoped(wallet.clientId, old), condition: .unconditional))
        }
        writes.append(
            .put(
                collection: Collection.pairings, id: scoped(wallet.clientId, pairingId),
                value: try Self.encode(PairingPointer(clientId: wallet.clientId, userId: wallet.userId)),
                condition: .absent))
        writes.append(
            .put(
                collection: Collection.wallets, id: scoped(wallet.clientId, wallet.userId),
                value: try Self.encode(updated), condition: version.map { .version($0) } ?? .absent))
        do {
            try await store.commit(writes)
        } catch let error as StoreError where error.code == .conflict {
            throw CheckoutError(.invalidState, "The pairing changed meanwhile; retry")
        }
        return (updated, pairingId)
    }

    /// The payment method the newer SDK shows: Click to Pay.
    public func paymentMethod() -> MasterpassPaymentMethod {
        .clickToPay(baseURL: configuration.publicBaseURL)
    }

    // MARK: - Field helpers

    static func requireId(_ value: String?, _ field: String, _ errors: inout CheckoutFieldErrors) {
        guard let value, !value.isEmpty else {
            errors.add(field, "\(field) is required")
            return
        }
        if !CheckoutIdentifiers.isWellFormed(value) {
            errors.add(field, "\(field) must be 1 to 100 letters, digits, '_' or '-'")
        }
    }

    static func twoDigits(_ value: Int) -> String { value < 10 ? "0" + String(value) : String(value) }

    static func parseISODate(_ text: String) -> Date? {
        let plain = ISO8601DateFormatter()
        if let date = plain.date(from: text) { return date }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: text)
    }
}
