import FuzzSupport
import HTTPServer

@testable import Checkout

/// A checkout URL's query (`checkoutId=…&cartId=…&amount=…`) as the hosted checkout reads it: form decoding,
/// then ``CheckoutRequest/init(queryItems:)``. Properties: an accepted request has a positive amount, a
/// validity period in range, a callback URL that parses again as written, and every locale parse answers.
@main
enum CheckoutRequestFuzz {
    static func main() {
        FuzzDriver.run { bytes in
            guard let form = try? URLEncodedForm.parse(bytes) else { return }
            let items = form.pairs.map { ($0.name, $0.value) }
            for (_, value) in items.prefix(8) { _ = CheckoutLocale(parsing: value) }
            guard let request = try? CheckoutRequest(queryItems: items) else { return }
            FuzzCheck.require(request.amountMinorUnits > 0, "accepted a non-positive amount")
            FuzzCheck.require(
                (1...CheckoutRequest.maximumValidityPeriodMinutes).contains(request.validityPeriodMinutes),
                "accepted validity period out of range")
            FuzzCheck.require(!request.allowedCardTypes.isEmpty, "accepted no card types")
            if let url = request.callbackURL {
                FuzzCheck.require(
                    (try? CheckoutCallbackURL(parsing: url.description)) == url, "callback URL does not parse again")
            }
            for type in request.allowedCardTypes {
                FuzzCheck.require(
                    CheckoutCryptoFormat.accepted(by: type).contains(request.cryptoType(for: type)),
                    "crypto format not accepted by its card type")
            }
            _ = request.amount
        }
    }
}
