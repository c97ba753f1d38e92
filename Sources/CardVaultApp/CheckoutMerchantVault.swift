public import CardKit
public import Checkout
import Foundation
public import Payments
public import VaultCore
import VaultStore

/// The hosted checkout's card vault over the merchant API's own services: a natural user per checkout shopper, a
/// card registration, the tokenization step
/// (``CardRegistrationService/tokenize(clientId:id:form:signals:requireSecurityCode:)``,
/// the code path of `POST /tokenize/...`: CardKit validation, vaulted number, held security code, profiling
/// attempt, rate limit) and the registration's completion, which creates the card.
public struct CheckoutMerchantVault: CheckoutCardVault {
    let services: MerchantServices

    public init(services: MerchantServices) {
        self.services = services
    }

    static let shoppers = Collections.checkoutShoppers

    public func tokenize(
        clientId: String, shopperReference: String, currency: Currency, card: CheckoutCardInput,
        signals: CheckoutDeviceSignals
    ) async throws -> VaultedCheckoutCard {
        // The registration's card type must accept the brand, or tokenization refuses the number.
        guard let brand = BrandCatalog.standard.brand(forDigits: card.number.unsafeRevealed),
            let cardType = MangopayCardType.allCases.first(where: { $0.accepts(brand) })
        else { throw CheckoutCardRefusal.invalidNumber }
        let userId = try await shopper(clientId: clientId, reference: shopperReference, holder: card.cardHolderName)
        let registration = try await services.cardRegistrations.create(
            clientId: clientId, userId: userId, currency: currency.code, cardType: cardType.rawValue,
            tag: "checkout")
        let expiry = card.expiry.replacingOccurrences(of: "/", with: "")
        let code = card.securityCode.unsafeRevealed
        let result = try await services.cardRegistrations.tokenize(
            clientId: clientId, id: registration.id,
            form: TokenizationForm(
                data: registration.preregistrationData, accessKeyRef: registration.accessKey,
                cardNumber: card.number.unsafeRevealed, cardExpirationDate: expiry, cardCvx: code.isEmpty ? nil : code),
            signals: DeviceSignals(
                ipAddress: signals.ipAddress, userAgent: signals.userAgent, acceptLanguage: signals.acceptLanguage,
                device: signals.device),
            requireSecurityCode: !code.isEmpty)
        let token: String
        let profilingReference: String
        switch result {
        case .success(let data, let reference):
            token = data.unsafeRevealed
            profilingReference = reference
        case .failure(let code):
            switch code {
            case .invalidCardNumber: throw CheckoutCardRefusal.invalidNumber
            case .invalidExpiry: throw CheckoutCardRefusal.invalidExpiry
            case .invalidSecurityCode: throw CheckoutCardRefusal.invalidSecurityCode
            case .accessDenied, .locked, .delayExceeded:
                throw CheckoutError(.invalidState, "The card could not be registered; try again")
            }
        case .rateLimited:
            throw CheckoutCardRefusal.rateLimited
        }
        let completed = try await services.cardRegistrations.update(
            clientId: clientId, id: registration.id, registrationData: "data=" + token,
            cardHolderName: String(card.cardHolderName.prefix(255)), tag: nil)
        guard let cardId = completed.cardId else {
            throw CheckoutError(.invalidState, "The card could not be registered; try again")
        }
        let stored = try await services.cards.get(clientId: clientId, id: cardId)
        let month = Int(stored.expirationDate.prefix(2)) ?? 0
        let year = 2000 + (Int(stored.expirationDate.suffix(2)) ?? 0)
        return VaultedCheckoutCard(
            cardId: cardId, brand: CardBrand(rawValue: stored.brand) ?? brand, alias: stored.alias, expiryMonth: month,
            expiryYear: year, profilingReference: profilingReference)
    }

    public func accountNumber(clientId: String, cardId: String) async throws -> Redacted<String> {
        let (pan, _) = try await services.cards.vaultedNumber(clientId: clientId, cardId: cardId)
        return Redacted(pan.unmaskedDigits)
    }

    public func eraseShopper(clientId: String, shopperReference: String) async throws {
        let store = services.environment.store
        let key = try services.environment.recordIds.scoped(clientId, shopperReference)
        guard let record = try await store.get(Self.shoppers, id: key) else { return }
        let userId = String(decoding: record.value, as: UTF8.self)
        do {
            _ = try await services.closeUser(clientId: clientId, id: userId)
        } catch let error as PaymentsError where error.code == .notFound {
            // The user is gone already; only the pointer is left.
        }
        try await store.delete(Self.shoppers, id: key)
    }

    /// The user standing for a checkout shopper of `clientId`: one per merchant `userId` (or per checkout when the
    /// merchant sent none), created on first use.
    func shopper(clientId: String, reference: String, holder: String) async throws -> String {
        // The merchant's user id is personal data: the record id is its keyed hash.
        let key = try services.environment.recordIds.scoped(clientId, reference)
        let store = services.environment.store
        if let record = try await store.get(Self.shoppers, id: key) {
            return String(decoding: record.value, as: UTF8.self)
        }
        var fields = UserFields()
        let names = holder.split(separator: " ", maxSplits: 1).map(String.init)
        fields.firstName = String((names.first ?? "Checkout").prefix(100))
        fields.lastName = String((names.count > 1 ? names[1] : "Shopper").prefix(100))
        fields.email = "checkout-shopper@cardvault.example"
        fields.tag = "checkout shopper"
        let user = try await services.users.create(clientId: clientId, type: .natural, sca: false, fields: fields)
        do {
            try await store.put(Self.shoppers, id: key, value: Array(user.id.utf8), condition: .absent)
            return user.id
        } catch let error as StoreError where error.code == .conflict {
            // Another submission created the shopper first; use theirs.
            guard let record = try await store.get(Self.shoppers, id: key) else { throw error }
            return String(decoding: record.value, as: UTF8.self)
        }
    }
}
