import Foundation
import Risk
import VaultCore
import VaultCrypto
public import VaultStore

/// A line of a PayPal order (`LineItems`), its amounts in minor units of the pay-in's currency.
public struct PayPalLineItem: Sendable, Equatable, Codable {
    public var name: String?
    public var quantity: Int64?
    public var unitAmount: Int64?
    public var taxAmount: Int64?
    public var description: String?
    public var category: String?
    public var sku: String?

    public init(
        name: String? = nil, quantity: Int64? = nil, unitAmount: Int64? = nil, taxAmount: Int64? = nil,
        description: String? = nil, category: String? = nil, sku: String? = nil
    ) {
        self.name = name
        self.quantity = quantity
        self.unitAmount = unitAmount
        self.taxAmount = taxAmount
        self.description = description
        self.category = category
        self.sku = sku
    }

    public static let categories = ["PHYSICAL_GOODS", "DIGITAL_GOODS", "DONATION"]

    /// `UnitAmount × Quantity + TaxAmount` summed over `items`; nil when any step overflows 64 bits.
    public static func total(_ items: [PayPalLineItem]) -> Int64? {
        var total: Int64 = 0
        for item in items {
            let product = (item.unitAmount ?? 0).multipliedReportingOverflow(by: item.quantity ?? 0)
            let line = product.partialValue.addingReportingOverflow(item.taxAmount ?? 0)
            let sum = total.addingReportingOverflow(line.partialValue)
            if product.overflow || line.overflow || sum.overflow { return nil }
            total = sum.partialValue
        }
        return total
    }
}

/// The buyer's PayPal account as the approval reports it (shown once the buyer approved).
public struct PayPalBuyer: Sendable, Equatable, Codable {
    public var payerId: String
    public var email: String?
    public var firstName: String?
    public var lastName: String?
    public var country: String?
    public var phone: String?
}

/// What a PayPal pay-in adds to a pay-in: its order, the shopper's URLs and the buyer.
public struct PayPalOrder: Sendable, Equatable, Codable {
    public var orderId: String
    public var returnURL: String
    public var cancelURL: String?
    public var lineItems: [PayPalLineItem]
    public var shippingPreference: String?
    public var reference: String?
    /// Set by the older `/payins/paypal/web` (`ShippingAddress.RecipientName`); nil for the newer calls.
    public var recipientName: String?
    public var isLegacy: Bool
    public var buyer: PayPalBuyer
}

/// What a merchant sends to create a PayPal pay-in, one-off or recurring.
public struct PayPalPayInRequest: Sendable, Equatable {
    public var authorId: String?
    public var creditedUserId: String?
    public var creditedWalletId: String?
    public var debitedFunds: Funds?
    public var fees: Funds?
    public var returnURL: String?
    public var cancelURL: String?
    public var lineItems: [PayPalLineItem]?
    public var shippingPreference: String?
    public var reference: String?
    public var recipientName: String?
    public var recurringPayinRegistrationId: String?
    /// The older `/payins/paypal/web`: no line items.
    public var isLegacy = false
    /// Descriptor, tag, culture and shipping (funds and ids in it are not looked at).
    public var details = PayInRequest()

    public init() {}
}

extension PayInService {
    /// The sandbox's PayPal refusal: an amount whose last two digits are these fails with 101199 at creation.
    public static let payPalRefusedCents: Int64 = 13

    /// Creates a PayPal pay-in (`CREATED`, awaiting the buyer's approval on the sandbox approval page).
    /// - Throws: ``PaymentsError`` `.invalidParameters` naming every wrong field (line items that do not sum to
    ///   `DebitedFunds` included).
    public func createPayPalPayIn(clientId: String, request: PayPalPayInRequest) async throws -> PayIn {
        var rules = FieldRules()
        rules.required(request.authorId, "AuthorId", maximum: 100)
        rules.required(request.creditedWalletId, "CreditedWalletId", maximum: 100)
        rules.funds(request.debitedFunds, "DebitedFunds", allowZero: false)
        rules.funds(request.fees, "Fees", allowZero: true)
        Self.checkPayPal(request, debited: request.debitedFunds, returnRequired: true, &rules)
        try rules.check()
        guard let author = try await users.read(clientId: clientId, id: request.authorId!)?.value else {
            throw PaymentsError.invalid(
                "AuthorId", "The user \(Identifier.printable(request.authorId!)) does not exist.")
        }
        guard let wallet = try await wallets.read(clientId: clientId, id: request.creditedWalletId!)?.value else {
            throw PaymentsError.invalid(
                "CreditedWalletId", "The wallet \(Identifier.printable(request.creditedWalletId!)) does not exist.")
        }
        rules.credit(
            of: wallet, debited: request.debitedFunds!, fees: request.fees!, creditedUserId: request.creditedUserId)
        try rules.check()
        let linked = try payPalLinked(
            .payPal, request, author: author, wallet: wallet, debited: request.debitedFunds!, fees: request.fees!)
        return try await createLinked(clientId: clientId, linked) { _ in [] }
    }

    /// Creates a recurring PayPal pay-in on a `PAYPAL` registration: a CIT (awaiting approval) until one succeeded,
    /// then MITs that succeed without the buyer. Absent funds take the registration's.
    /// - Throws: ``PaymentsError`` `.invalidParameters` (wrong fields, an unknown, card or ENDED registration).
    public func createRecurringPayPalPayIn(clientId: String, request: PayPalPayInRequest) async throws -> PayIn {
        var rules = FieldRules()
        rules.required(request.recurringPayinRegistrationId, "RecurringPayinRegistrationId", maximum: 100)
        if let funds = request.debitedFunds { rules.funds(funds, "DebitedFunds", allowZero: false) }
        if let fees = request.fees { rules.funds(fees, "Fees", allowZero: true) }
        try rules.check()
        let registrationId = request.recurringPayinRegistrationId!
        return try await retryingOnConflict(
            attempts: 10,
            exhausted: PaymentsError(
                .concurrentChange, "The recurring registration kept changing under this pay-in; nothing was written")
        ) {
            guard let found = try await readRegistration(clientId: clientId, id: registrationId),
                found.value.paymentType == "PAYPAL"
            else {
                throw PaymentsError.invalid(
                    "RecurringPayinRegistrationId",
                    "The PayPal recurring registration \(Identifier.printable(registrationId)) does not exist.")
            }
            var registration = found.value
            let initiator: RecurringRegistrationStateMachine.Initiator =
                registration.machine.state == .inProgress ? .merchant : .customer
            let (defaultDebited, defaultFees) = registration.defaultFunds()
            let debited = request.debitedFunds ?? defaultDebited
            let fees =
                request.fees
                ?? (request.debitedFunds == nil ? defaultFees : Funds(currency: debited.currency, amount: 0))
            var rules = FieldRules()
            Self.checkPayPal(request, debited: debited, returnRequired: initiator == .customer, &rules)
            if debited.currency != registration.firstTransactionDebitedFunds.currency {
                rules.fail("DebitedFunds.Currency", "The currency must be the registration's.")
            }
            try rules.check()
            var limitReached = false
            do throws(RecurringRegistrationStateMachine.Refusal) {
                _ = try registration.machine.handle(.admit(initiator))
            } catch .limitReached {
                limitReached = true
            } catch {
                throw PaymentsError.invalid("RecurringPayinRegistrationId", "The recurring registration has ended.")
            }
            guard let author = try await users.read(clientId: clientId, id: registration.authorId)?.value,
                let wallet = try await wallets.read(clientId: clientId, id: registration.creditedWalletId)?.value
            else { throw PaymentsError(.invalidState, "The registration's author or wallet no longer exists") }
            rules.credit(of: wallet, debited: debited, fees: fees, creditedUserId: nil)
            try rules.check()
            var payPalRequest = request
            if payPalRequest.details.shipping == nil { payPalRequest.details.shipping = registration.shipping }
            var linked = try payPalLinked(
                initiator == .customer ? .payPalRecurringCustomerInitiated : .payPalRecurringMerchantInitiated,
                payPalRequest, author: author, wallet: wallet, debited: debited, fees: fees)
            linked.recurringRegistrationId = registration.id
            if limitReached { linked.decide = { _, _ in .decline(.dataValidationError) } }
            let version = found.version
            return try await createLinked(clientId: clientId, linked) { payIn in
                guard !limitReached else { return [] }
                registration.lastPayInId = payIn.id
                return try await registrationWrites(&registration, version: version, for: payIn, initiator: initiator)
            }
        }
    }

    /// The pay-in behind a PayPal approval link (its secret checked in constant time); expired first when past due.
    /// - Throws: ``PaymentsError`` `.notFound` for an unknown pay-in, another flow's or a wrong secret.
    public func payPalApproval(clientId: String, id: String, secret: String) async throws -> PayIn {
        _ = try await authenticatedChallenge(
            kind: Self.kind(.payIn), clientId: clientId, id: id, secret: secret, redirect: .payPalApproval)
        return try await get(clientId: clientId, id: id)
    }

    /// Records the buyer's answer on the approval page; a second answer changes nothing.
    /// - Returns: the final pay-in and where the browser goes: `ReturnURL` once approved, else `CancelURL` (or
    ///   `ReturnURL` without one), with `transactionId` added.
    public func answerPayPalApproval(
        clientId: String, id: String, secret: String, approved: Bool
    ) async throws -> (PayIn, String) {
        _ = try await authenticatedChallenge(
            kind: Self.kind(.payIn), clientId: clientId, id: id, secret: secret, redirect: .payPalApproval)
        let now = environment.clock.now
        let event: PayInStateMachine.Event =
            approved ? .challengeCompleted(passed: true, at: now) : .challengeCancelled(at: now)
        let final = try await transition(clientId: clientId, id: id, purpose: .payIn, event: event)
        let order = final.payPal
        let target = final.machine.state == .succeeded ? order?.returnURL : order?.cancelURL ?? order?.returnURL
        return (final, Self.returnURL(target ?? "", transactionId: final.id))
    }

    /// The rules of a PayPal request besides funds and ids: URLs, line items summing to `debited`, the enumerations.
    static func checkPayPal(
        _ request: PayPalPayInRequest, debited: Funds?, returnRequired: Bool, _ rules: inout FieldRules
    ) {
        if returnRequired { rules.required(request.returnURL, "ReturnURL", maximum: 2000) }
        for (url, field) in [(request.returnURL, "ReturnURL"), (request.cancelURL, "CancelURL")] {
            if let url, !isReturnURL(url) || url.utf8.count > 2000 {
                rules.fail(field, "The \(field) must be an absolute http or https URL.")
            }
        }
        rules.oneOf(
            request.shippingPreference, ["SET_PROVIDED_ADDRESS", "GET_FROM_FILE", "NO_SHIPPING"], "ShippingPreference")
        rules.length(request.reference, "Reference", maximum: 127)
        rules.length(request.recipientName, "ShippingAddress.RecipientName")
        rules.length(request.details.tag, "Tag")
        if let descriptor = request.details.statementDescriptor, descriptor.isEmpty || descriptor.utf8.count > 10 {
            rules.fail("StatementDescriptor", "The StatementDescriptor must be 1 to 10 letters, digits or spaces.")
        }
        if let culture = request.details.culture, culture.utf8.count != 2 || !culture.allSatisfy(\.isLetter) {
            rules.fail("Culture", "The Culture must be a two-letter language code.")
        }
        if let address = request.details.shipping?.address { address.validate(&rules, prefix: "Shipping.Address") }
        guard !request.isLegacy else { return }
        guard let items = request.lineItems, !items.isEmpty else {
            rules.fail("LineItems", "The LineItems field is required.")
            return
        }
        for (index, item) in items.enumerated() {
            let field = "LineItems[\(index)]."
            rules.required(item.name, field + "Name", maximum: 127)
            rules.length(item.description, field + "Description", maximum: 127)
            rules.length(item.sku, field + "Sku", maximum: 127)
            rules.oneOf(item.category, PayPalLineItem.categories, field + "Category")
            if (item.quantity ?? 0) < 1 { rules.fail(field + "Quantity", "The Quantity must be a positive integer.") }
            for (amount, name) in [(item.unitAmount, "UnitAmount"), (item.taxAmount ?? 0, "TaxAmount")] {
                guard let amount, (0...Funds.maximumAmount).contains(amount) else {
                    rules.fail(field + name, "The \(name) must be between 0 and \(Funds.maximumAmount) minor units.")
                    continue
                }
            }
        }
        guard rules.errors.keys.allSatisfy({ !$0.hasPrefix("LineItems") }), let debited else { return }
        guard let total = PayPalLineItem.total(items) else {
            rules.fail("LineItems", "The sum of UnitAmount × Quantity + TaxAmount over the LineItems is out of range.")
            return
        }
        if total != debited.amount {
            rules.fail(
                "LineItems",
                "The sum of UnitAmount × Quantity + TaxAmount over the LineItems (\(total)) must equal "
                    + "DebitedFunds.Amount (\(debited.amount)).")
        }
    }

    /// A PayPal pay-in prepared for ``createLinked(clientId:_:extraWrites:)``: its order and buyer, and the sandbox's
    /// decision (the risk block, the refused amounts, else approval by the buyer; an MIT needs none).
    private func payPalLinked(
        _ kind: PayInKind, _ request: PayPalPayInRequest, author: User, wallet: Wallet, debited: Funds, fees: Funds
    ) throws -> LinkedPayIn {
        let fields = author.fields
        let legal = author.personType == .legal
        let buyer = PayPalBuyer(
            payerId: Identifier.secret(count: 13, random: environment.random).uppercased(),
            email: legal ? fields.legalRepresentativeEmail ?? fields.email : fields.email,
            firstName: legal ? fields.legalRepresentativeFirstName : fields.firstName,
            lastName: legal ? fields.legalRepresentativeLastName : fields.lastName,
            country: request.details.shipping?.address?.country
                ?? (legal ? fields.headquartersAddress?.country : fields.address?.country ?? fields.countryOfResidence),
            phone: legal ? nil : fields.phoneNumber)
        var details = request.details
        details.secureModeReturnURL = request.returnURL
        let key = try environment.fingerprintKeys.fingerprintKey(forClient: author.clientId)
        let fingerprint =
            "p"
            + Identifier.hex(
                HMACSHA256.authenticationCode(for: Array(("PAYPAL:" + author.id).utf8), using: key).prefix(15))
        let merchantInitiated = kind == .payPalRecurringMerchantInitiated
        let refused = debited.amount % 100 == Self.payPalRefusedCents
        var linked = LinkedPayIn(
            kind: kind, card: nil, wallet: wallet, authorId: author.id, creditedUserId: wallet.ownerId,
            debited: debited,
            fees: fees, request: details, recurringRegistrationId: nil, walletNetwork: nil, walletTransactionId: nil,
            fingerprint: fingerprint,
            cardInfo: CardInfo(
                bin: "", issuingBank: nil, issuerCountryCode: nil, type: nil, brand: "PAYPAL", subType: nil)
        ) { risk, deadline in
            if risk.decision == .block { return .decline(.blockedByFraudPolicy) }
            if refused { return .decline(ResultCode.known["101199"]!) }
            return merchantInitiated ? .frictionless : .challenge(expiresAt: deadline)
        }
        linked.payPal = PayPalOrder(
            orderId: Identifier.secret(count: 17, random: environment.random).uppercased(),
            returnURL: request.returnURL ?? "", cancelURL: request.cancelURL, lineItems: request.lineItems ?? [],
            shippingPreference: request.shippingPreference, reference: request.reference,
            recipientName: request.recipientName, isLegacy: request.isLegacy, buyer: buyer)
        return linked
    }
}

extension PayPalLineItem: BinarySchema {
    public static let binaryFields: [BinaryField<Self>] = [
        .string(1, \.name), .int(2, \.quantity), .int(3, \.unitAmount), .int(4, \.taxAmount), .string(5, \.description),
        .string(6, \.category), .string(7, \.sku),
    ]
    public static var binaryBlank: Self { PayPalLineItem() }
}

extension PayPalBuyer: BinarySchema {
    public static let binaryFields: [BinaryField<Self>] = [
        .string(1, \.payerId), .string(2, \.email), .string(3, \.firstName), .string(4, \.lastName),
        .string(5, \.country), .string(6, \.phone),
    ]
    public static var binaryBlank: Self { PayPalBuyer(payerId: "") }
}

extension PayPalOrder: BinarySchema {
    public static let binaryFields: [BinaryField<Self>] = [
        .string(1, \.orderId), .string(2, \.returnURL), .string(3, \.cancelURL), .records(4, \.lineItems),
        .string(5, \.shippingPreference), .string(6, \.reference), .string(7, \.recipientName), .bool(8, \.isLegacy),
        .record(9, \.buyer),
    ]
    public static var binaryBlank: Self {
        PayPalOrder(
            orderId: "", returnURL: "", cancelURL: nil, lineItems: [], shippingPreference: nil, reference: nil,
            recipientName: nil, isLegacy: false, buyer: .binaryBlank)
    }
}
