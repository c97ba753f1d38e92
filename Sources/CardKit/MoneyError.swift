/// Why an amount was refused. The message never quotes the input. Equal by code.
public struct MoneyError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The opaque reason code; compare against the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidFormat, tooManyDecimals, negativeAmount, overflow, unknownCurrency, currencyMismatch
        }

        private let base: Base

        private init(_ base: Base) { self.base = base }

        /// Not a plain decimal number (`12.55`): empty, letters, signs, separators, exponents, a dangling point.
        public static let invalidFormat = Code(.invalidFormat)
        /// More digits after the point than the currency's minor unit has.
        public static let tooManyDecimals = Code(.tooManyDecimals)
        /// A minus sign: amounts are never negative.
        public static let negativeAmount = Code(.negativeAmount)
        /// More minor units than a 64-bit integer holds.
        public static let overflow = Code(.overflow)
        /// No ISO 4217 currency has this code.
        public static let unknownCurrency = Code(.unknownCurrency)
        /// Arithmetic between amounts in different currencies.
        public static let currencyMismatch = Code(.currencyMismatch)

        /// The code's name (`tooManyDecimals`).
        public var description: String { base.rawValue }
    }

    /// The reason.
    public let code: Code
    /// A fixed sentence, safe to log.
    public let message: String

    /// Creates an error with a code and a fixed message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    static let invalidFormat = MoneyError(.invalidFormat, "amount must be a plain decimal number such as 12.55")
    static let tooManyDecimals = MoneyError(
        .tooManyDecimals, "amount has more decimals than the currency's minor unit allows")
    static let negativeAmount = MoneyError(.negativeAmount, "amount must not be negative")
    static let overflow = MoneyError(.overflow, "amount is too large")
    static let unknownCurrency = MoneyError(.unknownCurrency, "currency is not an ISO 4217 code")
    static let currencyMismatch = MoneyError(.currencyMismatch, "amounts are in different currencies")
}
