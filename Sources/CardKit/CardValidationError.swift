/// Why a card number, expiry date or security code was refused.
///
/// The message is a fixed sentence: it never quotes the input, so it is safe to log and to show. Two errors are
/// equal when their codes are equal.
public struct CardValidationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The opaque reason code; compare against the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidCharacter, invalidLength, luhnFailed, unknownBrand
            case invalidExpiry, expired, expiryTooFarAhead
            case invalidSecurityCode
        }

        private let base: Base

        private init(_ base: Base) { self.base = base }

        /// Something other than a digit, a space or a dash.
        public static let invalidCharacter = Code(.invalidCharacter)
        /// Too few or too many digits, for card numbers in general or for the brand.
        public static let invalidLength = Code(.invalidLength)
        /// The Luhn check digit does not match.
        public static let luhnFailed = Code(.luhnFailed)
        /// No known brand issues numbers in this range.
        public static let unknownBrand = Code(.unknownBrand)
        /// The expiry date is not MMYY (or MM/YY), or the month is not 01–12.
        public static let invalidExpiry = Code(.invalidExpiry)
        /// The last day of the expiry month has passed.
        public static let expired = Code(.expired)
        /// The expiry date is more than twenty years ahead.
        public static let expiryTooFarAhead = Code(.expiryTooFarAhead)
        /// The security code is not digits only, or not the size the brand asks for.
        public static let invalidSecurityCode = Code(.invalidSecurityCode)

        /// The code's name, for logs and machine-readable output (`luhnFailed`).
        public var description: String { base.rawValue }
    }

    /// The reason.
    public let code: Code
    /// A fixed sentence, safe to log: it never contains the input.
    public let message: String

    /// Creates an error with a code and a fixed message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

extension CardValidationError {
    static let invalidCharacter = CardValidationError(
        .invalidCharacter, "card number may contain only digits, spaces and dashes")
    static let invalidLength = CardValidationError(.invalidLength, "card number has the wrong number of digits")
    static let luhnFailed = CardValidationError(.luhnFailed, "card number fails the Luhn check")
    static let unknownBrand = CardValidationError(.unknownBrand, "card number belongs to no known brand")
    static let invalidExpiry = CardValidationError(.invalidExpiry, "expiry date must be MMYY with a month 01-12")
    static let expired = CardValidationError(.expired, "card has expired")
    static let expiryTooFarAhead = CardValidationError(
        .expiryTooFarAhead, "expiry date is more than 20 years ahead")
    static let invalidSecurityCode = CardValidationError(
        .invalidSecurityCode, "security code must be digits only, of the size the brand asks for")

    /// The shared error value for a code.
    static func forCode(_ code: Code) -> CardValidationError {
        switch code {
        case .invalidCharacter: .invalidCharacter
        case .invalidLength: .invalidLength
        case .luhnFailed: .luhnFailed
        case .unknownBrand: .unknownBrand
        case .invalidExpiry: .invalidExpiry
        case .expired: .expired
        case .expiryTooFarAhead: .expiryTooFarAhead
        default: .invalidSecurityCode
        }
    }
}
