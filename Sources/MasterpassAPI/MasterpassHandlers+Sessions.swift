import CardKit
import Checkout
import Foundation
import HTTPServer

extension MasterpassHandlers {
    /// `POST /masterpass/checkouts/{checkoutId}/sessions`: the merchant's server starts a hosted checkout.
    func startSession(_ request: Request, clientId: String) async throws -> Response {
        let body = try jsonObject(request)
        let input = CheckoutSessionInput(
            cartId: try string(body, "cartId"), amountMinorUnits: try minorUnits(body, "amount"),
            currency: try string(body, "currency"), userId: try string(body, "userId"),
            allowedCardTypes: body["allowedCardTypes"] == nil ? nil : try strings(body, "allowedCardTypes"),
            suppress3DS: try bool(body, "suppress3DS"), cvc2Support: try bool(body, "cvc2Support"),
            callbackURL: try string(body, "callbackUrl"),
            suppressShippingAddress: try bool(body, "suppressShippingAddress"),
            shippingLocationProfile: try strings(body, "shippingLocationProfile").joined(separator: ",").nonEmpty,
            locale: try string(body, "locale"), channel: try string(body, "channel"),
            pairingId: try string(body, "pairingId"), cryptoOptions: try cryptoOptions(body),
            unpredictableNumber: try string(body, "unpredictableNumber"),
            validityPeriodMinutes: try decimal(body, "validityPeriodMinutes"))
        let started = try await checkout.startSession(
            clientId: clientId, checkoutId: request.parameters["checkoutId"] ?? "", input)
        let session = started.session
        var response = try json(
            MasterpassStartedCheckoutView(
                checkoutSessionId: session.sessionId, transactionId: session.transactionId,
                checkoutId: session.request.checkoutId, cartId: session.request.cartId, url: started.url,
                amount: session.request.amountMinorUnits, currency: session.request.currency.code,
                userId: session.request.userId, suppress3DS: session.request.suppress3DS,
                cvc2Support: session.request.cvc2Support,
                allowedCardTypes: session.request.allowedCardTypes.map(\.rawValue).sorted(),
                expiresAt: Int64(session.machine.expiresAt.timeIntervalSince1970)),
            status: 201)
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    /// An amount in minor units: a JSON integer (not a decimal, a string or a boolean).
    func minorUnits(_ body: [String: Any], _ name: String) throws -> Int64? {
        guard let value = body[name], !(value is NSNull) else { return nil }
        let refusal = CheckoutError.invalid(
            name, "\(name) must be a whole number of minor units, such as 7490 for 74.90 USD")
        guard !Self.isJSONBoolean(value), let number = value as? NSNumber else { throw refusal }
        let text = NSDecimalNumber(decimal: number.decimalValue).stringValue
        guard let minor = Int64(text) else { throw refusal }
        return minor
    }

    /// `cryptoOptions` as a JSON array, handed on as its text for the checkout request's parser.
    func cryptoOptions(_ body: [String: Any]) throws -> String? {
        guard let value = body["cryptoOptions"], !(value is NSNull) else { return nil }
        if let text = value as? String { return text }
        guard value is [Any], let data = try? JSONSerialization.data(withJSONObject: value) else {
            throw CheckoutError.invalid("cryptoOptions", "cryptoOptions must be a JSON array")
        }
        return String(decoding: data, as: UTF8.self)
    }
}

/// The answer to a started checkout: where to send the shopper, and what the server fixed.
struct MasterpassStartedCheckoutView: Encodable {
    var checkoutSessionId: String
    var transactionId: String
    var checkoutId: String
    var cartId: String
    var url: String
    /// Minor units.
    var amount: Int64
    var currency: String
    var userId: String?
    var suppress3DS: Bool
    var cvc2Support: Bool
    var allowedCardTypes: [String]
    /// Unix seconds: the shopper must finish before this.
    var expiresAt: Int64
}

extension String {
    /// nil for the empty string.
    fileprivate var nonEmpty: String? { isEmpty ? nil : self }
}
