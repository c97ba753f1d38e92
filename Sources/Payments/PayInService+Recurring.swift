import CardKit
import Foundation
import Risk
import VaultCore
import VaultStore

/// What a merchant sends to create a recurring pay-in: a CIT (with `BrowserInfo`, `IpAddress` and
/// `SecureModeReturnURL`: the shopper is there) or an MIT (none of them). Absent funds take the registration's.
public struct RecurringPayInRequest: Sendable, Equatable {
    public var recurringPayinRegistrationId: String?
    public var debitedFunds: Funds?
    public var fees: Funds?
    /// Browser data, return URL, descriptor, tag, culture, profiling reference (funds and ids are not looked at).
    public var details: PayInRequest

    public init(recurringPayinRegistrationId: String? = nil, debitedFunds: Funds? = nil, fees: Funds? = nil) {
        self.recurringPayinRegistrationId = recurringPayinRegistrationId
        self.debitedFunds = debitedFunds
        self.fees = fees
        self.details = PayInRequest()
    }

    /// A CIT when the shopper's browser data came with it.
    public var initiator: RecurringRegistrationStateMachine.Initiator {
        details.browserInfo != nil || details.ipAddress != nil || details.secureModeReturnURL != nil
            ? .customer : .merchant
    }
}

extension PayInService {
    // MARK: Registrations

    /// Creates a recurring pay-in registration (status CREATED) for a card of the author and a wallet.
    /// - Throws: ``PaymentsError`` `.invalidParameters` naming every wrong field.
    public func createRecurringRegistration(
        clientId: String, request: RecurringRegistrationRequest
    ) async throws -> RecurringRegistration {
        var rules = FieldRules()
        let isPayPal = request.paymentType == "PAYPAL"
        if !isPayPal { rules.required(request.cardId, "CardId", maximum: 100) }
        rules.required(request.authorId, "AuthorId", maximum: 100)
        rules.required(request.creditedWalletId, "CreditedWalletId", maximum: 100)
        rules.oneOf(request.paymentType, ["CARD_DIRECT", "PAYPAL"], "PaymentType")
        rules.oneOf(request.frequency, RecurringRegistration.frequencies, "Frequency")
        rules.length(request.tag, "Tag")
        rules.funds(request.firstTransactionDebitedFunds, "FirstTransactionDebitedFunds", allowZero: false)
        rules.funds(request.firstTransactionFees, "FirstTransactionFees", allowZero: true)
        if let next = request.nextTransactionDebitedFunds {
            rules.funds(next, "NextTransactionDebitedFunds", allowZero: false)
        }
        if let fees = request.nextTransactionFees {
            rules.funds(fees, "NextTransactionFees", allowZero: true)
        }
        if let cycles = request.freeCycles,
            cycles < 0 || cycles > Int64(RecurringRegistrationStateMachine.maximumPayIns)
        {
            rules.fail("FreeCycles", "The FreeCycles must be between 0 and 99.")
        }
        let now = environment.nowSeconds
        if let end = request.endDate, end <= now { rules.fail("EndDate", "The EndDate must be in the future.") }
        if let billing = request.billing?.address { billing.validate(&rules, prefix: "Billing.Address") }
        if let shipping = request.shipping?.address { shipping.validate(&rules, prefix: "Shipping.Address") }
        try rules.check()

        let card = isPayPal ? nil : try await cards.read(clientId: clientId, id: request.cardId!)?.value
        if !isPayPal, card == nil {
            throw PaymentsError.invalid("CardId", "The card \(Identifier.printable(request.cardId!)) does not exist.")
        }
        guard try await users.exists(clientId: clientId, id: request.authorId!) else {
            throw PaymentsError.invalid(
                "AuthorId", "The user \(Identifier.printable(request.authorId!)) does not exist.")
        }
        guard let wallet = try await wallets.read(clientId: clientId, id: request.creditedWalletId!)?.value else {
            throw PaymentsError.invalid(
                "CreditedWalletId", "The wallet \(Identifier.printable(request.creditedWalletId!)) does not exist.")
        }
        if let card, !card.active { rules.fail("CardId", "The card is not active.") }
        if let card, card.userId != request.authorId { rules.fail("CardId", "The card does not belong to the author.") }
        if let credited = request.creditedUserId, credited != wallet.ownerId {
            rules.fail("CreditedUserId", "The CreditedUserId must be the owner of the credited wallet.")
        }
        for (funds, field) in [
            (request.firstTransactionDebitedFunds, "FirstTransactionDebitedFunds"),
            (request.firstTransactionFees, "FirstTransactionFees"),
            (request.nextTransactionDebitedFunds, "NextTransactionDebitedFunds"),
            (request.nextTransactionFees, "NextTransactionFees"),
        ] {
            if let funds, funds.currency != wallet.currency {
                rules.fail(field + ".Currency", "The currency must be the credited wallet's (\(wallet.currency)).")
            }
        }
        if let debited = request.firstTransactionDebitedFunds, let fees = request.firstTransactionFees,
            fees.amount > debited.amount
        {
            rules.fail("FirstTransactionFees.Amount", "The Fees cannot be above the DebitedFunds.")
        }
        if let debited = request.nextTransactionDebitedFunds, let fees = request.nextTransactionFees,
            fees.amount > debited.amount
        {
            rules.fail("NextTransactionFees.Amount", "The Fees cannot be above the DebitedFunds.")
        }
        try rules.check()

        var registration = RecurringRegistration(
            id: Identifier.make("recurr_", random: environment.random), clientId: clientId,
            machine: RecurringRegistrationStateMachine(), authorId: request.authorId!, cardId: card?.id ?? "",
            creditedUserId: wallet.ownerId, creditedWalletId: wallet.id,
            firstTransactionDebitedFunds: request.firstTransactionDebitedFunds!,
            firstTransactionFees: request.firstTransactionFees!,
            nextTransactionDebitedFunds: request.nextTransactionDebitedFunds,
            nextTransactionFees: request.nextTransactionFees, billing: request.billing, shipping: request.shipping,
            endDate: request.endDate, frequency: request.frequency, fixedNextAmount: request.fixedNextAmount ?? false,
            fractionedPayment: request.fractionedPayment ?? false, migration: request.migration ?? false,
            freeCycles: request.freeCycles ?? 0, tag: request.tag, creationDate: now, result: nil,
            cumulatedDebitedAmount: 0, cumulatedFeesAmount: 0, lastPayInId: nil)
        registration.paymentType = isPayPal ? "PAYPAL" : nil
        var writes: [RecordWrite] = [
            .put(
                collection: Collections.recurringRegistrations, id: Identifier.scoped(clientId, registration.id),
                value: try RecordCoding.encode(registration), condition: .absent)
        ]
        writes += try await EventLog.writes(
            .recurringRegistrationCreated, resourceId: registration.id, clientId: clientId, environment: environment)
        try await mapStoreErrors { try await environment.store.commit(writes) }
        environment.logger.info(
            "recurring registration created",
            ["clientId": .string(clientId), "registrationId": .string(registration.id)])
        return registration
    }

    /// The recurring registration `id`; one past its `EndDate` reads as ENDED (and is stored so, with its event).
    /// - Throws: ``PaymentsError`` `.notFound`.
    public func recurringRegistration(clientId: String, id: String) async throws -> RecurringRegistration {
        guard let found = try await readRegistration(clientId: clientId, id: id) else {
            throw PaymentsError.notFound("RecurringPayinRegistration", id: id)
        }
        let registration = found.value
        if let end = registration.endDate, end <= environment.nowSeconds, registration.machine.state != .ended {
            return try await updateRecurringRegistration(clientId: clientId, id: id, changes: .init(status: "ENDED"))
        }
        return registration
    }

    /// The fields `PUT /recurringpayinregistrations/{id}` may change.
    public struct RecurringRegistrationChanges: Sendable, Equatable {
        /// `ENDED` ends the registration for good; the current status changes nothing; anything else is refused.
        public var status: String?
        public var cardId: String?
        public var billing: PartyAddress?
        public var shipping: PartyAddress?

        public init(
            status: String? = nil, cardId: String? = nil, billing: PartyAddress? = nil, shipping: PartyAddress? = nil
        ) {
            self.status = status
            self.cardId = cardId
            self.billing = billing
            self.shipping = shipping
        }
    }

    /// Applies `changes`: ends the registration (`Status: ENDED`, irreversible), or moves it to another card of the
    /// author, or changes its billing and shipping. An ENDED registration takes no change.
    /// - Throws: ``PaymentsError`` `.notFound`, `.invalidParameters`.
    public func updateRecurringRegistration(
        clientId: String, id: String, changes: RecurringRegistrationChanges
    ) async throws -> RecurringRegistration {
        var rules = FieldRules()
        if let billing = changes.billing?.address { billing.validate(&rules, prefix: "Billing.Address") }
        if let shipping = changes.shipping?.address { shipping.validate(&rules, prefix: "Shipping.Address") }
        try rules.check()
        return try await retryingOnConflict(
            attempts: 10,
            exhausted: PaymentsError(
                .concurrentChange, "The recurring registration kept changing under this request; nothing was written")
        ) {
            guard let found = try await readRegistration(clientId: clientId, id: id) else {
                throw PaymentsError.notFound("RecurringPayinRegistration", id: id)
            }
            var registration = found.value
            let ends = changes.status == "ENDED"
            if let status = changes.status, !ends, status != registration.status {
                throw PaymentsError.invalid("Status", "The Status can only be set to ENDED.")
            }
            let changesSomething =
                (changes.cardId.map { $0 != registration.cardId } ?? false)
                || (changes.billing.map { $0 != registration.billing } ?? false)
                || (changes.shipping.map { $0 != registration.shipping } ?? false)
            if registration.machine.state == .ended {
                if changesSomething { throw PaymentsError.invalid("Status", "An ENDED registration cannot change.") }
                return registration
            }
            if let cardId = changes.cardId, cardId != registration.cardId {
                guard let card = try await cards.read(clientId: clientId, id: cardId)?.value else {
                    throw PaymentsError.invalid("CardId", "The card \(Identifier.printable(cardId)) does not exist.")
                }
                guard card.active, card.userId == registration.authorId else {
                    throw PaymentsError.invalid("CardId", "The card must be an active card of the author.")
                }
                registration.cardId = card.id
            }
            if let billing = changes.billing { registration.billing = billing }
            if let shipping = changes.shipping { registration.shipping = shipping }
            var writes: [RecordWrite] = []
            if ends, case .transitioned(let state) = try? registration.machine.handle(.end) {
                writes += try await EventLog.writes(
                    Self.eventType(state), resourceId: registration.id, clientId: clientId, environment: environment)
            }
            guard !writes.isEmpty || changesSomething else { return registration }
            writes.append(
                .put(
                    collection: Collections.recurringRegistrations, id: Identifier.scoped(clientId, id),
                    value: try RecordCoding.encode(registration), condition: .version(found.version)))
            try await mapStoreErrors { try await environment.store.commit(writes) }
            environment.logger.info(
                "recurring registration updated",
                ["clientId": .string(clientId), "registrationId": .string(id), "status": .string(registration.status)])
            return registration
        }
    }

    // MARK: Recurring pay-ins

    /// Creates a recurring pay-in on a registration: a CIT (the shopper is present: browser data required, 3-D Secure
    /// as for a direct pay-in) or an MIT (no shopper: the card's stored credential, no security code and no challenge;
    /// refused only by a decline or the risk engine's block). The pay-in, the registration's change and their events
    /// are one batch. The 100th pay-in of a registration fails with 205001 and is not linked.
    /// - Throws: ``PaymentsError`` `.invalidParameters` (wrong fields, an ENDED registration, an MIT before a
    ///   succeeded CIT), `.notFound` never (an unknown registration is a parameter error).
    public func createRecurringPayIn(clientId: String, request: RecurringPayInRequest) async throws -> PayIn {
        var rules = FieldRules()
        rules.required(request.recurringPayinRegistrationId, "RecurringPayinRegistrationId", maximum: 100)
        if let funds = request.debitedFunds { rules.funds(funds, "DebitedFunds", allowZero: false) }
        if let fees = request.fees { rules.funds(fees, "Fees", allowZero: true) }
        let initiator = request.initiator
        let details = request.details
        if initiator == .customer {
            rules.required(details.secureModeReturnURL, "SecureModeReturnURL", maximum: 2000)
            if let url = details.secureModeReturnURL, !Self.isReturnURL(url) {
                rules.fail("SecureModeReturnURL", "The SecureModeReturnURL must be an absolute http or https URL.")
            }
            if details.ipAddress == nil { rules.fail("IpAddress", "The IpAddress field is required.") }
            if details.browserInfo == nil { rules.fail("BrowserInfo", "The BrowserInfo field is required.") }
        }
        if let ip = details.ipAddress, !Self.isIPAddress(ip) {
            rules.fail("IpAddress", "The IpAddress must be an IPv4 or IPv6 address.")
        }
        rules.oneOf(details.secureMode, SecureMode.allCases.map(\.rawValue), "SecureMode")
        rules.length(details.tag, "Tag")
        if let descriptor = details.statementDescriptor, descriptor.isEmpty || descriptor.utf8.count > 10 {
            rules.fail("StatementDescriptor", "The StatementDescriptor must be 1 to 10 letters, digits or spaces.")
        }
        try rules.check()
        let registrationId = request.recurringPayinRegistrationId!

        return try await retryingOnConflict(
            attempts: 10,
            exhausted: PaymentsError(
                .concurrentChange, "The recurring registration kept changing under this pay-in; nothing was written")
        ) {
            guard let found = try await readRegistration(clientId: clientId, id: registrationId) else {
                throw PaymentsError.invalid(
                    "RecurringPayinRegistrationId",
                    "The recurring registration \(Identifier.printable(registrationId)) does not exist.")
            }
            var registration = found.value
            if let end = registration.endDate, end <= environment.nowSeconds, registration.machine.state != .ended {
                throw PaymentsError.invalid("RecurringPayinRegistrationId", "The recurring registration has ended.")
            }
            if registration.paymentType == "PAYPAL" {
                throw PaymentsError.invalid(
                    "RecurringPayinRegistrationId",
                    "The registration is a PayPal one: use /payins/payment-methods/paypal/recurring.")
            }
            let (defaultDebited, defaultFees) = registration.defaultFunds()
            let debited = request.debitedFunds ?? defaultDebited
            let fees =
                request.fees
                ?? (request.debitedFunds == nil ? defaultFees : Funds(currency: debited.currency, amount: 0))
            if debited.currency != registration.firstTransactionDebitedFunds.currency {
                rules.fail("DebitedFunds.Currency", "The currency must be the registration's.")
            }
            if fees.currency != debited.currency {
                rules.fail("Fees.Currency", "The Fees currency must be the DebitedFunds currency.")
            }
            if fees.amount > debited.amount { rules.fail("Fees.Amount", "The Fees cannot be above the DebitedFunds.") }
            try rules.check()

            var limitReached = false
            do throws(RecurringRegistrationStateMachine.Refusal) {
                _ = try registration.machine.handle(.admit(initiator))
            } catch .limitReached {
                limitReached = true
            } catch .ended {
                throw PaymentsError.invalid("RecurringPayinRegistrationId", "The recurring registration has ended.")
            } catch {
                throw PaymentsError.invalid(
                    "RecurringPayinRegistrationId",
                    "The registration needs a customer-initiated pay-in (with BrowserInfo, IpAddress and "
                        + "SecureModeReturnURL) that succeeds before merchant-initiated ones.")
            }
            guard let card = try await cards.read(clientId: clientId, id: registration.cardId)?.value,
                let wallet = try await wallets.read(clientId: clientId, id: registration.creditedWalletId)?.value
            else { throw PaymentsError(.invalidState, "The registration's card or wallet no longer exists") }
            if !card.active { throw PaymentsError.invalid("CardId", "The card is not active.") }

            var payInDetails = details
            if payInDetails.billing == nil { payInDetails.billing = registration.billing }
            if payInDetails.shipping == nil { payInDetails.shipping = registration.shipping }
            if initiator == .merchant { payInDetails.secureMode = nil }
            let sandbox = self.sandbox
            let mock = Self.recurringMock(registration, amount: debited.amount, initiator: initiator)
            let secureMode = SecureMode(rawValue: details.secureMode ?? "DEFAULT") ?? .default
            let alias = card.alias
            let refusedForLimit = limitReached
            let linked = LinkedPayIn(
                kind: initiator == .customer ? .recurringCustomerInitiated : .recurringMerchantInitiated, card: card,
                wallet: wallet, authorId: registration.authorId, creditedUserId: registration.creditedUserId,
                debited: debited, fees: fees, request: payInDetails, recurringRegistrationId: registration.id,
                walletNetwork: nil, walletTransactionId: nil, fingerprint: card.fingerprint,
                cardInfo: cardInfo(card)
            ) { risk, deadline in
                if refusedForLimit { return .decline(.dataValidationError) }
                if let mock { return .decline(mock) }
                let decided = AuthorizationPolicy.decide(
                    secureMode: secureMode, amount: debited.amount, risk: risk.decision, cardAlias: alias,
                    sandbox: sandbox, challengeDeadline: deadline)
                guard initiator == .merchant else { return decided }
                // No shopper to authenticate: an MIT never gets a challenge; only a decline or a block refuses it.
                if case .challenge = decided { return .frictionless }
                return decided
            }
            let version = found.version
            return try await createLinked(clientId: clientId, linked) { payIn in
                guard !limitReached else { return [] }
                registration.lastPayInId = payIn.id
                return try await registrationWrites(&registration, version: version, for: payIn, initiator: initiator)
            }
        }
    }

    /// The sandbox's recurring mock (Mangopay's documented one): an amount of 33501 with the registration's
    /// `Billing.AddressLine2` naming the result.
    static func recurringMock(
        _ registration: RecurringRegistration, amount: Int64, initiator: RecurringRegistrationStateMachine.Initiator
    ) -> ResultCode? {
        guard amount == 33501, let line = registration.billing?.address?.addressLine2 else { return nil }
        switch line {
        case "01100": return .doNotHonor
        case "01116": return ResultCode.known["101199"]
        case "01125": return .cardInactive
        case "01131": return initiator == .merchant ? .softDecline : nil
        case "03022": return initiator == .customer ? .authenticationFailed : nil
        default: return nil
        }
    }

}
