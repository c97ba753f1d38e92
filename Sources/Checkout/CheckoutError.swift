public import VaultCore

/// One problem with one field of a checkout request or a backend call: the field's wire name and a sentence that
/// says what is wrong. Never quotes a card number or security code.
public struct CheckoutFieldError: Sendable, Hashable, Codable {
    /// The field's wire name (`amount`, `callbackUrl`, `cardNumber`).
    public var field: String
    /// What is wrong, in English, safe to show.
    public var message: String

    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }
}

/// A failure of the hosted checkout or of the Masterpass-dialect merchant API. An opaque code, a message safe to
/// show, and for validation failures the field errors in the order the fields were checked. Equal by code.
public struct CheckoutError: CodedError, Equatable {
    /// What went wrong. The wire layer maps each code to an HTTP status and a Masterpass `ReasonCode`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Fields are missing or invalid (`fieldErrors` says which). HTTP 400 `INVALID_REQUEST`.
        public static let invalidRequest = Code("invalidRequest")
        /// The checkout id is unknown, or belongs to another client. HTTP 403 `AUTHORIZATION_FAILED`.
        public static let authorizationFailed = Code("authorizationFailed")
        /// The callback URL does not start with a prefix registered for the checkout id. HTTP 400
        /// `CALLBACK_URL_NOT_REGISTERED`.
        public static let callbackNotRegistered = Code("callbackNotRegistered")
        /// No such transaction, pairing or session for this client. HTTP 404 `RESOURCE_NOT_FOUND`.
        public static let notFound = Code("notFound")
        /// The transaction, session or cryptogram has expired. HTTP 410 `TRANSACTION_EXPIRED`.
        public static let expired = Code("expired")
        /// The operation does not fit the current state (payment data before the shopper finished, a postback
        /// that contradicts an earlier one). HTTP 409 `INVALID_STATE`.
        public static let invalidState = Code("invalidState")
        /// A checkout id or pairing exists already. HTTP 409 `RESOURCE_CONFLICT`.
        public static let alreadyExists = Code("alreadyExists")
        /// The store cannot write now. HTTP 503 `SERVICE_UNAVAILABLE`.
        public static let unavailable = Code("unavailable")
    }

    public let code: Code
    public let message: String
    public let fieldErrors: [CheckoutFieldError]
    public let location: SourceLocation

    public init(
        _ code: Code, _ message: String, fieldErrors: [CheckoutFieldError] = [], file: String = #fileID,
        line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.fieldErrors = fieldErrors
        self.location = SourceLocation(file: file, line: line)
    }

    public static func == (lhs: CheckoutError, rhs: CheckoutError) -> Bool { lhs.code == rhs.code }

    /// A validation failure listing `fieldErrors`.
    public static func invalid(
        _ fieldErrors: [CheckoutFieldError], file: String = #fileID, line: Int = #line
    )
        -> CheckoutError
    {
        CheckoutError(.invalidRequest, "The request is invalid", fieldErrors: fieldErrors, file: file, line: line)
    }

    /// A validation failure of one field.
    public static func invalid(
        _ field: String, _ message: String, file: String = #fileID, line: Int = #line
    )
        -> CheckoutError
    {
        invalid([CheckoutFieldError(field: field, message: message)], file: file, line: line)
    }

    /// The answer for an unknown checkout id or one owned by another client: the same for both, so that
    /// checkout ids cannot be probed.
    public static func authorizationFailed(file: String = #fileID, line: Int = #line) -> CheckoutError {
        CheckoutError(
            .authorizationFailed, "The checkoutId is not registered for this merchant", file: file, line: line)
    }

    /// A 404 about a kind of resource (`transaction`, `pairing`).
    public static func notFound(_ kind: String, file: String = #fileID, line: Int = #line) -> CheckoutError {
        CheckoutError(.notFound, "No such \(kind) for this merchant", file: file, line: line)
    }
}

/// Collects field errors in order; the checkout request parser and backend calls share it.
struct CheckoutFieldErrors {
    private(set) var errors: [CheckoutFieldError] = []

    var isEmpty: Bool { errors.isEmpty }

    mutating func add(_ field: String, _ message: String) {
        errors.append(CheckoutFieldError(field: field, message: message))
    }

    /// Throws an `invalidRequest` error when any field failed.
    func check() throws(CheckoutError) {
        if !errors.isEmpty { throw CheckoutError.invalid(errors) }
    }
}
