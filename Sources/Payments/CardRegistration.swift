import Foundation
import VaultCrypto

/// The state of a card registration.
public enum CardRegistrationStatus: String, Sendable, Codable {
    case created = "CREATED"
    case validated = "VALIDATED"
    case error = "ERROR"
}

/// A result code and its text, as card registrations and transactions carry them.
public struct ResultCode: Sendable, Hashable, Codable {
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public static let success = ResultCode(code: "000000", message: "Success")
    public static let invalidCardNumber = ResultCode(code: "105202", message: "Card number: invalid format")
    public static let invalidExpiry = ResultCode(code: "105203", message: "Expiry date: missing or invalid format")
    public static let invalidSecurityCode = ResultCode(code: "105204", message: "CVV: missing or invalid format")
    public static let invalidRegistrationData = ResultCode(
        code: "105206", message: "Registration data : Invalid format")
    public static let tokenInputError = ResultCode(code: "105299", message: "Token input Error")
}

/// The codes the tokenization endpoint answers with (`errorCode=…`), as the PSP's tokenization server did.
public enum TokenizationErrorCode: String, Sendable, Codable, CaseIterable {
    /// Invalid card number: format, length, Luhn, unknown brand, or a brand the registration's type refuses.
    case invalidCardNumber = "02625"
    /// Invalid date: not MMYY, month out of range, expired, or too far ahead.
    case invalidExpiry = "02626"
    /// Invalid security code for the card's brand.
    case invalidSecurityCode = "02627"
    /// Access key or preregistration data wrong, registration unknown, or the key already used.
    case accessDenied = "09101"
    /// Too many failed attempts on this registration.
    case locked = "09102"
    /// The access key expired.
    case delayExceeded = "02631"

    /// The registration result a merchant sees after sending `errorCode=<code>` back as `RegistrationData`.
    public var registrationResult: ResultCode {
        switch self {
        case .invalidCardNumber: .invalidCardNumber
        case .invalidExpiry: .invalidExpiry
        case .invalidSecurityCode: .invalidSecurityCode
        case .accessDenied, .locked, .delayExceeded: .tokenInputError
        }
    }
}

/// What a successful tokenization left on its registration, to build the card from at completion.
public struct PendingCard: Sendable, Equatable, Codable {
    public var cardId: String
    /// Digest of the one-time `data=` token the browser got.
    var tokenDigest: [UInt8]
    public var brand: String
    public var cardProvider: String
    public var alias: String
    public var expirationDate: String
    public var fingerprint: String
    /// Issuer country (alpha-3) from the BIN table, when known.
    public var country: String?
    public var profilingReference: String
    public var tokenizedAt: Int64
}

/// A card registration: created by the merchant, tokenized by the shopper's browser with its access key,
/// completed by the merchant with the `RegistrationData` the browser received.
///
/// The transitions are pure (``tokenizationGate(accessKey:preregistrationData:now:configuration:)`` and
/// ``completion(registrationData:now:configuration:)``); the service does the I/O around them.
public struct CardRegistration: Sendable, Equatable, Codable {
    public var id: String
    public var clientId: String
    public var userId: String
    public var currency: String
    public var cardType: String
    public var tag: String?
    public var creationDate: Int64
    /// The access key the browser posts as `accessKeyRef`. Kept because the API returns it on GET; the file store
    /// seals every record value.
    public var accessKey: String
    public var preregistrationData: String
    public var registrationData: String?
    public var cardId: String?
    public var result: ResultCode?
    public var status: CardRegistrationStatus
    public var cardHolderName: String?
    /// Failed tokenization attempts so far.
    public var failedAttempts: Int
    /// Set once a tokenization succeeded: the access key is spent.
    public var pending: PendingCard?

    /// Whether the access key (and with it a tokenized, not yet completed card number) has expired at `now`.
    public func isPastAccessKeyExpiry(now: Int64, _ configuration: PaymentsConfiguration) -> Bool {
        Double(now - creationDate) > configuration.accessKeyLifetime
    }

    /// Whether the registration refuses further attempts.
    public func isLocked(_ configuration: PaymentsConfiguration) -> Bool {
        failedAttempts >= configuration.maximumTokenizationFailures
    }

    /// The outcome of checking a tokenization attempt's credentials and timing, before looking at the card.
    public enum Gate: Sendable, Equatable {
        case proceed
        /// Refuse with `code`; when `countsAsFailure`, the attempt counter goes up.
        case refuse(TokenizationErrorCode, countsAsFailure: Bool)
    }

    /// Checks an attempt: locked → refuse; not `CREATED` or already tokenized (the key is single use) → refuse;
    /// wrong key or data → refuse and count; expired key → refuse.
    public func tokenizationGate(
        accessKey: String, preregistrationData: String, now: Int64, configuration: PaymentsConfiguration
    ) -> Gate {
        if isLocked(configuration) { return .refuse(.locked, countsAsFailure: false) }
        let keyMatches = Self.equalSecrets(accessKey, self.accessKey)
        let dataMatches = Self.equalSecrets(preregistrationData, self.preregistrationData)
        guard keyMatches, dataMatches else { return .refuse(.accessDenied, countsAsFailure: true) }
        guard status == .created, pending == nil else { return .refuse(.accessDenied, countsAsFailure: false) }
        if Double(now - creationDate) > configuration.accessKeyLifetime {
            return .refuse(.delayExceeded, countsAsFailure: false)
        }
        return .proceed
    }

    /// Whether two secrets hold the same bytes, compared in constant time in the strings' own UTF-8 (no copies).
    static func equalSecrets(_ lhs: String, _ rhs: String) -> Bool {
        var lhs = lhs
        var rhs = rhs
        return lhs.withUTF8 { left in
            rhs.withUTF8 { ConstantTime.equals(UnsafeRawBufferPointer(left), UnsafeRawBufferPointer($0)) }
        }
    }

    /// What completing the registration with some `RegistrationData` does.
    public enum Completion: Sendable, Equatable {
        /// Create the pending card and mark the registration `VALIDATED`.
        case validate(PendingCard)
        /// Mark the registration `ERROR` with this result (and drop any pending card).
        case fail(ResultCode)
        /// Nothing changes (the same data sent again to a finished registration).
        case unchanged
        /// The registration is finished and other data was sent.
        case alreadyProcessed
    }

    /// Decides what `registrationData` does to this registration. `tokenDigest` computes the digest a `data=`
    /// token must match.
    public func completion(registrationData: String, now: Int64, configuration: PaymentsConfiguration) -> Completion {
        guard status == .created else {
            return registrationData == self.registrationData ? .unchanged : .alreadyProcessed
        }
        if registrationData.hasPrefix("errorCode=") {
            let code = registrationData.dropFirst("errorCode=".count)
            if let known = TokenizationErrorCode(rawValue: String(code)) { return .fail(known.registrationResult) }
            return code.count == 5 && code.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
                ? .fail(.tokenInputError) : .fail(.invalidRegistrationData)
        }
        guard registrationData.hasPrefix("data=") else { return .fail(.invalidRegistrationData) }
        let token = registrationData.dropFirst("data=".count)
        guard let pending, ConstantTime.equals(CardRegistration.digest(token: token), pending.tokenDigest)
        else {
            return isPastAccessKeyExpiry(now: now, configuration)
                ? .fail(.tokenInputError) : .fail(.invalidRegistrationData)
        }
        // The vaulted number lives until the access key expires (the sweeper removes it then): completing later
        // fails, whether or not the sweeper has run yet.
        if isPastAccessKeyExpiry(now: now, configuration) { return .fail(.tokenInputError) }
        return .validate(pending)
    }

    /// The digest kept for a `data=` token (the token itself is never stored).
    static func digest(token: Substring) -> [UInt8] {
        var token = token
        return token.withUTF8 { HMACSHA256.authenticationCode(for: UnsafeRawBufferPointer($0), using: digestKey) }
    }

    private static let digestKey = SymmetricKey(copying: Array("cardvault registration data digest v1".utf8))
}
