import CardKit
import Foundation
import VaultCore
import VaultCrypto
import VaultStore

@testable import Checkout

/// A card vault for checkout tests: validates with CardKit like the tokenization path does and keeps numbers in
/// memory, so PCI reads can be checked.
final class CheckoutTestVault: CheckoutCardVault {
    private let numbers = Locked<[String: String]>([:])
    private let counter = Locked(0)
    let clock: ManualClock

    init(clock: ManualClock) { self.clock = clock }

    func tokenize(
        clientId: String, shopperReference: String, currency: Currency, card: CheckoutCardInput,
        signals: CheckoutDeviceSignals
    ) async throws -> VaultedCheckoutCard {
        guard let pan = try? PAN(card.number.unsafeRevealed) else { throw CheckoutCardRefusal.invalidNumber }
        guard let expiry = try? CardExpiry(parsing: card.expiry), expiry.isValid(at: clock.now) else {
            throw CheckoutCardRefusal.invalidExpiry
        }
        let code = card.securityCode.unsafeRevealed
        if !code.isEmpty, !SecurityCode.isValid(code, for: pan.brand) { throw CheckoutCardRefusal.invalidSecurityCode }
        let id = counter.withLock { value in
            value += 1
            return "card_\(clientId)_\(value)"
        }
        numbers.withLock { $0[id] = pan.unmaskedDigits }
        return VaultedCheckoutCard(
            cardId: id, brand: pan.brand, alias: pan.alias, expiryMonth: expiry.month, expiryYear: expiry.year,
            profilingReference: "prof_\(id)")
    }

    func accountNumber(clientId: String, cardId: String) async throws -> Redacted<String> {
        guard cardId.hasPrefix("card_\(clientId)_"), let number = numbers.withLock({ $0[cardId] }) else {
            throw CheckoutError.notFound("card")
        }
        return Redacted(number)
    }

    /// The shoppers erased, in order.
    let erased = Locked<[String]>([])

    func eraseShopper(clientId: String, shopperReference: String) async throws {
        erased.withLock { $0.append(clientId + "/" + shopperReference) }
    }
}

/// A 3-D Secure step for tests: frictionless, challenge or decline by card alias; challenge outcomes are set by
/// the test.
final class CheckoutTestAuthenticator: CheckoutAuthenticator {
    enum Plan { case frictionless, challenge, decline }
    let currentPlan = Locked(Plan.frictionless)
    let outcomes = Locked<[String: CheckoutAuthenticationOutcome]>([:])
    let started = Locked<[CheckoutAuthenticationRequest]>([])
    private let counter = Locked(0)

    /// Sets what every following authentication does.
    func plan(_ plan: Plan) { currentPlan.withLock { $0 = plan } }

    func start(_ request: CheckoutAuthenticationRequest) async throws -> CheckoutAuthenticationStart {
        started.withLock { $0.append(request) }
        let id = counter.withLock { value in
            value += 1
            return "auth\(value)"
        }
        let plan = currentPlan.withLock { $0 }
        switch plan {
        case .frictionless:
            return .decided(
                authenticationId: id,
                CheckoutAuthenticationOutcome(
                    status: .authenticated, challenged: false, resultCode: "000000", resultMessage: "Success"))
        case .decline:
            return .decided(
                authenticationId: id,
                CheckoutAuthenticationOutcome(
                    status: .notAuthenticated, challenged: false, resultCode: "101301", resultMessage: "failed"))
        case .challenge:
            return .challenge(
                authenticationId: id, redirectURL: "https://acs.test/challenge/\(id)", expiresAt: Date.distantFuture)
        }
    }

    func finish(_ id: String, passed: Bool) {
        outcomes.withLock {
            $0[id] = CheckoutAuthenticationOutcome(
                status: passed ? .authenticated : .notAuthenticated, challenged: true,
                resultCode: passed ? "000000" : "101301", resultMessage: passed ? "Success" : "failed")
        }
    }

    func outcome(clientId: String, authenticationId: String) async throws -> CheckoutAuthenticationOutcome? {
        outcomes.withLock { $0[authenticationId] }
    }
}

/// A checkout service over an in-memory store with a manual clock, plus helpers for the usual steps.
struct CheckoutFixture {
    let clock = ManualClock()
    let store = InMemoryRecordStore()
    let vault: CheckoutTestVault
    let authenticator = CheckoutTestAuthenticator()
    let service: CheckoutService
    let key = SymmetricKey(copying: [UInt8](repeating: 7, count: 32))

    static let checkoutId = "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"
    static let otherCheckoutId = "ffffeeeeddddccccbbbbaaaa99998888"
    static let mastercard = "5555555555554444"
    static let visa = "4111111111111111"

    init() {
        vault = CheckoutTestVault(clock: clock)
        service = CheckoutService(
            store: store, clock: clock, random: RandomPool(),
            configuration: CheckoutConfiguration(publicBaseURL: "https://vault.test"),
            cryptogramKey: key, recordIds: KeyedRecordIds(key: SymmetricKey(copying: [UInt8](repeating: 9, count: 32))),
            vault: vault, authenticator: authenticator)
    }

    /// Registers the shop's checkout id for client `shop` and another for client `rival`.
    func registerBoth() async throws {
        _ = try await service.register(
            clientId: "shop", checkoutId: Self.checkoutId, callbackPrefixes: ["https://shop.example/checkout/return"],
            allowedCardTypes: ["master", "visa", "amex"], merchantName: "Fancy Shop")
        _ = try await service.register(
            clientId: "rival", checkoutId: Self.otherCheckoutId, callbackPrefixes: ["https://rival.example/cb"],
            allowedCardTypes: ["master", "visa"], merchantName: "Rival")
    }

    static func query(_ overrides: [String: String?] = [:]) -> [(String, String)] {
        var fields: [String: String?] = [
            "checkoutId": checkoutId, "cartId": "cart-1", "amount": "11.22", "currency": "USD",
            "allowedCardTypes": "master,visa", "suppressShippingAddress": "false", "locale": "en_US",
            "channel": "mobile", "masterCryptoFormat": "UCAF,ICC",
            "callbackUrl": "https://shop.example/checkout/return?order=7",
        ]
        for (key, value) in overrides { fields[key] = value }
        return fields.compactMap { key, value in value.map { (key, $0) } }.sorted { $0.0 < $1.0 }
    }

    static func form(number: String = mastercard, shipping: Bool = true, consent: Bool = false) -> CheckoutForm {
        CheckoutForm(
            cardNumber: Redacted(number), expiry: "12/29", securityCode: Redacted("123"),
            cardHolderName: "Ada Lovelace",
            billing: CheckoutAddressForm(line1: "1 Main St", city: "Springfield", postalCode: "12345", country: "US"),
            shipping: shipping
                ? CheckoutAddressForm(line1: "2 Side St", city: "Shelbyville", postalCode: "54321", country: "US")
                : CheckoutAddressForm(),
            email: "ada@example.com", phone: "+1 555 0100", pairingConsent: consent)
    }

    /// Starts a checkout as its merchant would, server to server, from the fields of an old-style checkout URL
    /// (``query(_:)`` with `overrides`): the amount in minor units, card types as a list, crypto formats as
    /// `cryptoOptions`. The owner of the checkout id starts it (`rival` for ``otherCheckoutId``), unless `clientId`.
    func start(_ overrides: [String: String?] = [:], clientId: String? = nil) async throws -> CheckoutSession {
        let fields = Dictionary(Self.query(overrides), uniquingKeysWith: { first, _ in first })
        let checkoutId = fields["checkoutId"] ?? Self.checkoutId
        var minor: Int64?
        if let amount = fields["amount"] {
            minor = (try? Money(parsing: amount, currencyCode: fields["currency"] ?? "USD"))?.minorUnits ?? -1
        }
        var crypto: [String] = []
        for type in MasterpassCardType.allCases {
            if let formats = fields[type.rawValue + "CryptoFormat"] {
                let list = formats.split(separator: ",").map { "\"\($0)\"" }.joined(separator: ",")
                crypto.append("{\"cardType\":\"\(type.rawValue)\",\"format\":[\(list)]}")
            }
        }
        let input = CheckoutSessionInput(
            cartId: fields["cartId"], amountMinorUnits: minor, currency: fields["currency"], userId: fields["userId"],
            allowedCardTypes: fields["allowedCardTypes"].map { $0.split(separator: ",").map(String.init) },
            suppress3DS: (fields["suppress3DS"] ?? fields["suppress3Ds"]).map { $0 == "true" },
            cvc2Support: fields["cvc2Support"].map { $0 == "true" }, callbackURL: fields["callbackUrl"],
            suppressShippingAddress: fields["suppressShippingAddress"].map { $0 == "true" },
            shippingLocationProfile: fields["shippingLocationProfile"], locale: fields["locale"],
            channel: fields["channel"], pairingId: fields["pairingId"],
            cryptoOptions: fields["cryptoOptions"]
                ?? (crypto.isEmpty ? nil : "[" + crypto.joined(separator: ",") + "]"),
            unpredictableNumber: fields["unpredictableNumber"], validityPeriodMinutes: fields["validityPeriodMinutes"])
        let owner = clientId ?? (checkoutId == Self.otherCheckoutId ? "rival" : "shop")
        return try await service.startSession(clientId: owner, checkoutId: checkoutId, input).session
    }

    /// Starts a checkout and submits a card; returns the session id and the step.
    func checkout(
        _ overrides: [String: String?] = [:], form: CheckoutForm = CheckoutFixture.form()
    ) async throws -> (CheckoutSession, CheckoutStep) {
        let session = try await start(overrides)
        let step = try await service.submit(
            sessionId: session.sessionId, form: form, signals: CheckoutDeviceSignals(ipAddress: "192.0.2.1"))
        return (session, step)
    }
}

/// The query items of a URL string.
func queryItems(of url: String) -> [String: String] {
    var result: [String: String] = [:]
    for item in URLComponents(string: url)?.queryItems ?? [] { result[item.name] = item.value ?? "" }
    return result
}
