import CardVaultTesting
import Foundation
import VaultCore
import VaultCrypto
import VaultStore

@testable import Payments

/// A merchant API over an in-memory store and a manual clock, with helpers for the common set-up steps.
struct PaymentsFixture {
    let store = InMemoryRecordStore()
    let clock = ManualClock()
    let logs = MemoryLogHandler()
    let services: MerchantServices

    init(configuration: PaymentsConfiguration = PaymentsConfiguration(publicBaseURL: "https://vault.example/")) {
        let environment = PaymentsEnvironment.testing(
            store: store, clock: clock, configuration: configuration,
            logger: Logger(handler: logs, minimumLevel: .debug, clock: clock))
        services = MerchantServices(environment: environment)
    }

    static let visa = "4970107111111119"
    static let mastercard = "5555555555554444"
    static let amex = "378282246310005"

    func payer(_ clientId: String = "shop", email: String = "john@example.com") async throws -> User {
        var fields = UserFields()
        fields.firstName = "John"
        fields.lastName = "Doe"
        fields.email = email
        return try await services.users.create(clientId: clientId, type: .natural, sca: false, fields: fields)
    }

    func registration(_ clientId: String = "shop", cardType: String? = nil) async throws -> CardRegistration {
        let user = try await payer(clientId)
        return try await services.cardRegistrations.create(
            clientId: clientId, userId: user.id, currency: "EUR", cardType: cardType, tag: nil)
    }

    func form(
        _ registration: CardRegistration, number: String = visa, expiry: String = "1229", cvx: String = "123"
    ) -> TokenizationForm {
        TokenizationForm(
            data: registration.preregistrationData, accessKeyRef: registration.accessKey, cardNumber: number,
            cardExpirationDate: expiry, cardCvx: cvx)
    }

    func tokenize(
        _ registration: CardRegistration, _ form: TokenizationForm, ip: String = "192.0.2.1"
    ) async throws
        -> TokenizationResult
    {
        try await services.cardRegistrations.tokenize(
            clientId: registration.clientId, id: registration.id, form: form,
            signals: DeviceSignals(
                ipAddress: ip, userAgent: "UA/1", acceptLanguage: "fr-FR", device: ["screenWidth": "1024"]))
    }

    /// Registers a card end to end and returns it.
    func registeredCard(_ clientId: String = "shop", number: String = visa) async throws -> Card {
        let registration = try await registration(clientId)
        guard case .success(let token, _) = try await tokenize(registration, form(registration, number: number)) else {
            throw PaymentsError(.invalidState, "tokenization failed")
        }
        let done = try await services.cardRegistrations.update(
            clientId: clientId, id: registration.id, registrationData: "data=" + token.unsafeRevealed,
            cardHolderName: "John Doe", tag: nil)
        return try await services.cards.get(clientId: clientId, id: done.cardId!)
    }

    /// Every stored value, as text, for scans.
    func everyStoredValue(except collections: Set<String> = []) async throws -> [String] {
        var all: [String] = []
        for collection in [
            "clients", "bearer-tokens", "users", "wallets", "wallets-by-user", "card-registrations", "cards",
            "cards-by-user", "cards-by-fingerprint", "card-numbers", "profiling-attempts", "idempotent-responses",
        ] where !collections.contains(collection) {
            for record in try await store.scanAll(collection) {
                all.append(record.id + " " + String(decoding: record.value, as: UTF8.self))
            }
        }
        return all
    }
}

extension PaymentsError {
    /// The error a throwing call produced, for `#expect` on codes and fields.
    static func from(_ body: () async throws -> some Any) async -> PaymentsError? {
        do {
            _ = try await body()
            return nil
        } catch let error as PaymentsError {
            return error
        } catch {
            return nil
        }
    }
}
