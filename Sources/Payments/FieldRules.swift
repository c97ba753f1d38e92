import CardKit
import VaultCore

/// Format rules for request fields, collected into a field → problem map so that one answer names every
/// wrong field, as the Mangopay API does.
struct FieldRules {
    private(set) var errors: [String: String] = [:]

    /// Longest free-text field the API accepts.
    static let maximumTextLength = 255

    /// Records `problem` for `field` unless one is recorded already.
    mutating func fail(_ field: String, _ problem: String) {
        if errors[field] == nil { errors[field] = problem }
    }

    /// A required text field: present, not blank, at most `maximum` characters.
    mutating func required(_ value: String?, _ field: String, maximum: Int = maximumTextLength) {
        guard let value, !value.allSatisfy(\.isWhitespace) else {
            fail(field, "The \(field) field is required.")
            return
        }
        length(value, field, maximum: maximum)
    }

    /// An optional text field of at most `maximum` characters.
    mutating func length(_ value: String?, _ field: String, maximum: Int = maximumTextLength) {
        guard let value else { return }
        if value.count > maximum {
            fail(field, "The field \(field) must be a string with a maximum length of \(maximum).")
        }
    }

    /// A required amount (`DebitedFunds`, `Fees`, ...): a known ISO 4217 currency, an amount that is not negative
    /// (and not zero unless `allowZero`), at most ``Funds/maximumAmount`` minor units.
    mutating func funds(_ funds: Funds?, _ field: String, allowZero: Bool) {
        guard let funds else {
            fail(field, "The \(field) field is required.")
            return
        }
        if Currency(code: funds.currency) == nil {
            fail(field + ".Currency", "The code \(Self.quote(funds.currency)) cannot be found in the standard ISO 4217")
        }
        if funds.amount < 0 || (!allowZero && funds.amount == 0) {
            fail(field + ".Amount", allowZero ? "The amount cannot be negative." : "The amount must be positive.")
        }
        if funds.amount > Funds.maximumAmount {
            fail(field + ".Amount", "The amount cannot be above \(Funds.maximumAmount) minor units.")
        }
    }

    /// The credit of `wallet` by a transaction of `debited` with `fees`: the wallet's currency, fees in that
    /// currency and not above the amount, and `creditedUserId` (when sent) the wallet's owner.
    mutating func credit(of wallet: Wallet, debited: Funds, fees: Funds, creditedUserId: String?) {
        if debited.currency != wallet.currency {
            fail("DebitedFunds.Currency", "The currency must be the credited wallet's (\(wallet.currency)).")
        }
        if fees.currency != debited.currency {
            fail("Fees.Currency", "The Fees currency must be the DebitedFunds currency.")
        }
        if fees.amount > debited.amount { fail("Fees.Amount", "The Fees cannot be above the DebitedFunds.") }
        if let creditedUserId, creditedUserId != wallet.ownerId {
            fail("CreditedUserId", "The CreditedUserId must be the owner of the credited wallet.")
        }
    }

    /// An optional ISO 3166-1 alpha-2 country code.
    mutating func country(_ value: String?, _ field: String) {
        guard let value else { return }
        if !CountryCode.isValid(value) {
            fail(
                field,
                "The value \(Self.quote(value)) is not valid for \(field). It must be an ISO 3166-1 alpha-2 code.")
        }
    }

    /// An optional email address: one `@`, a non-empty local part, a dotted domain, no spaces, at most 254 bytes.
    mutating func email(_ value: String?, _ field: String) {
        guard let value else { return }
        if !Self.isEmail(value) { fail(field, "The \(field) field is not a valid e-mail address.") }
    }

    /// An optional value that must be one of `allowed`.
    mutating func oneOf(_ value: String?, _ allowed: [String], _ field: String) {
        guard let value else { return }
        if !allowed.contains(value) {
            fail(
                field,
                "Error converting value \(Self.quote(value)) for \(field). Allowed: " + allowed.joined(separator: ", "))
        }
    }

    /// An optional amount in minor units within ±``Funds/maximumAmount``.
    mutating func amount(_ value: Int64?, _ field: String) {
        guard let value else { return }
        if value < -Funds.maximumAmount || value > Funds.maximumAmount {
            fail(field, "The \(field) must be between -\(Funds.maximumAmount) and \(Funds.maximumAmount) minor units.")
        }
    }

    /// Throws a parameter error when any rule failed.
    func check() throws {
        if !errors.isEmpty { throw PaymentsError.invalid(errors) }
    }

    static func isEmail(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count <= 254, let at = bytes.firstIndex(of: 0x40), bytes.lastIndex(of: 0x40) == at else {
            return false
        }
        let local = bytes[..<at]
        let domain = bytes[(at + 1)...]
        guard !local.isEmpty, local.count <= 64, domain.count >= 3 else { return false }
        guard bytes.allSatisfy({ $0 > 0x20 && $0 != 0x7F && $0 != 0x2C && $0 != 0x3C && $0 != 0x3E }) else {
            return false
        }
        let labels = domain.split(separator: 0x2E, omittingEmptySubsequences: false)
        guard labels.count >= 2, labels.allSatisfy({ !$0.isEmpty }) else { return false }
        return domain.allSatisfy { Identifier.isIdentifierByte($0) || $0 == 0x2E || $0 >= 0x80 }
    }

    /// A value quoted for an error text, cut to 40 characters and with long digit runs hidden.
    static func quote(_ value: String) -> String {
        var text = String(value.prefix(40))
        var run = 0
        for byte in text.utf8 {
            // Separators do not end a run, so a dotted or spaced card number (`4970.1073.6205.4174`) is hidden
            // too, as request ids treat it.
            if byte == 0x20 || byte == 0x2D || byte == 0x2E || byte == 0x5F { continue }
            run = (byte >= 0x30 && byte <= 0x39) ? run + 1 : 0
            if run >= 6 {
                text = "(hidden)"
                break
            }
        }
        return "'" + text + "'"
    }
}
