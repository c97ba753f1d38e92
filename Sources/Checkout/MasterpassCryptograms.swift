public import CardKit
import Foundation
public import VaultCore
public import VaultCrypto

/// The fields a sandbox cryptogram is computed over. The card number is not one of them: the cryptogram binds the
/// token (`accountNumber`), never the PAN.
public struct MasterpassCryptogramFields: Sendable, Equatable {
    public var transactionId: String
    public var accountNumber: String
    public var amount: Money
    public var unpredictableNumber: String
    public var cryptoType: CheckoutCryptoFormat
    public var eci: String
    public var expiresAt: Int64

    public init(
        transactionId: String, accountNumber: String, amount: Money, unpredictableNumber: String,
        cryptoType: CheckoutCryptoFormat, eci: String, expiresAt: Int64
    ) {
        self.transactionId = transactionId
        self.accountNumber = accountNumber
        self.amount = amount
        self.unpredictableNumber = unpredictableNumber
        self.cryptoType = cryptoType
        self.eci = eci
        self.expiresAt = expiresAt
    }
}

/// The sandbox's token and cryptogram arithmetic: network-style tokens, payment account references, DSRP-like
/// cryptograms and authentication values, all HMAC-SHA256 under one server key with a label per use.
///
/// A sandbox cryptogram is `base64(HMAC(key, "cryptogram" ‖ transaction fields))`, cut to the size of its format
/// (UCAF: 20 bytes, like an AAV; ICC: 32 bytes; TAVV/TVV: 20 bytes); anyone holding the key can check it with
/// ``isValid(_:for:)``. Nothing here reads or produces a card number.
public struct MasterpassCryptograms: Sendable {
    private let key: SymmetricKey

    public init(key: SymmetricKey) {
        self.key = key
    }

    /// A token in network-token style for card `cardId` of `clientId`: as long as the card number, starting with
    /// the card's BIN (so that brand detection keeps working), the rest derived from the key, a valid Luhn check
    /// digit, and last four digits that differ from the card's (so it can never equal the number).
    public func networkToken(
        clientId: String, cardId: String, bin: String, length: Int, cardLastFour: String
    )
        -> String
    {
        let length = max(length, bin.utf8.count + 5)
        var counter = 0
        while true {
            let mac = code(label: "network-token", [clientId, cardId, String(counter)])
            var digits = bin
            var index = 0
            while digits.utf8.count < length - 1 {
                digits += String(mac[index % mac.count] % 10)
                index += 1
            }
            let check = Luhn.checkDigit(for: digits) ?? 0
            let token = digits + String(check)
            if token.suffix(4) != Substring(cardLastFour) { return token }
            counter += 1
        }
    }

    /// A payment account reference for the card: 29 upper-case alphanumerics, stable across tokens and
    /// checkouts of the same client.
    public func paymentAccountReference(clientId: String, cardId: String) -> String {
        let alphabet = Array("0123456789ABCDEFGHJKLMNPQRSTUVWXYZ".utf8)
        let mac = code(label: "par", [clientId, cardId])
        var out: [UInt8] = Array("5001".utf8)
        for byte in mac.prefix(25) { out.append(alphabet[Int(byte) % alphabet.count]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// The cryptogram value for `fields`, base64.
    public func cryptogram(for fields: MasterpassCryptogramFields) -> String {
        let mac = code(label: "cryptogram", Self.message(fields))
        let size = fields.cryptoType == .icc ? 32 : 20
        return Data(mac.prefix(size)).base64EncodedString()
    }

    /// True when `value` is the cryptogram of `fields` (constant-time comparison).
    public func isValid(_ value: String, for fields: MasterpassCryptogramFields) -> Bool {
        ConstantTime.equals(Array(value.utf8), Array(cryptogram(for: fields).utf8))
    }

    /// A 3-D Secure authentication value (CAVV/AAV) for an authenticated checkout: 20 bytes, base64 (28 characters).
    public func authenticationValue(transactionId: String, authenticationId: String) -> String {
        Data(code(label: "cavv", [transactionId, authenticationId]).prefix(20)).base64EncodedString()
    }

    /// A fresh EMV unpredictable number: 4 random bytes, base64 (8 characters).
    public static func unpredictableNumber(random: any RandomSource) -> String {
        Data(random.bytes(count: 4)).base64EncodedString()
    }

    static func message(_ fields: MasterpassCryptogramFields) -> [String] {
        [
            fields.transactionId, fields.accountNumber, String(fields.amount.minorUnits), fields.amount.currency.code,
            fields.unpredictableNumber, fields.cryptoType.rawValue, fields.eci, String(fields.expiresAt),
        ]
    }

    /// HMAC over `label`, then each part preceded by its length, so that no two part lists collide.
    private func code(label: String, _ parts: [String]) -> [UInt8] {
        var message = Array(label.utf8)
        for part in parts {
            let bytes = Array(part.utf8)
            let length = UInt32(bytes.count)
            message += [
                UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF),
            ]
            message += bytes
        }
        return HMACSHA256.authenticationCode(for: message, using: key)
    }
}

/// Electronic commerce indicators per brand (reference §4.3): Mastercard and Maestro 02 authenticated, 01
/// attempted, 00 none; Visa and the others 05, 06, 07.
public enum MasterpassECI {
    public static func value(for type: MasterpassCardType, status: CheckoutAuthenticationStatus?) -> String {
        let mastercardFamily = type == .master || type == .maestro
        switch status {
        case .authenticated: return mastercardFamily ? "02" : "05"
        case .attempted: return mastercardFamily ? "01" : "06"
        default: return mastercardFamily ? "00" : "07"
        }
    }
}
