public import VaultCore

/// A failure of a merchant-API operation: an opaque code, a message safe to show to the merchant, and for
/// parameter errors a map from field name to what is wrong with it. Equal by code.
///
/// Messages and field texts never hold a card number, security code, key or token; they name fields and rules.
public struct PaymentsError: CodedError, Equatable {
    /// What went wrong, as an opaque code. The wire layer maps each code to a status and a `Type`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// One or more parameters are missing or invalid (`errors` names them). HTTP 400.
        public static let invalidParameters = Code("invalidParameters")
        /// The resource does not exist for this client. HTTP 404.
        public static let notFound = Code("notFound")
        /// Client credentials (ClientId/ApiKey) are wrong. OAuth `invalid_client`, HTTP 401.
        public static let invalidClient = Code("invalidClient")
        /// A bearer token is missing, wrong or expired. HTTP 401.
        public static let invalidToken = Code("invalidToken")
        /// The caller is authenticated but may not act on this path (another client's). HTTP 403.
        public static let forbidden = Code("forbidden")
        /// An idempotency key was reused with another request. HTTP 409.
        public static let idempotencyConflict = Code("idempotencyConflict")
        /// No stored response for this idempotency key. HTTP 400 `correlationid_not_found`.
        public static let correlationIdNotFound = Code("correlationIdNotFound")
        /// The resource is in a state that does not allow the operation. HTTP 400.
        public static let invalidState = Code("invalidState")
        /// Too many requests from one source. HTTP 429.
        public static let rateLimited = Code("rateLimited")
        /// The store cannot write now. HTTP 503.
        public static let unavailable = Code("unavailable")
        /// A change that cannot proceed because its record kept changing under it (after waiting its turn and
        /// retrying); nothing was written and the message says which record. HTTP 409.
        public static let concurrentChange = Code("concurrentChange")
        /// A record with this id exists already (client names, for instance).
        public static let alreadyExists = Code("alreadyExists")
        /// A stored record the operation needs is damaged (it fails authentication); nothing was changed. HTTP 500
        /// with the error's `Id`; `cardvault verify` names the record.
        public static let damagedRecord = Code("damagedRecord")
    }

    public let code: Code
    public let message: String
    /// Field name → problem, for ``Code/invalidParameters`` (and the `RessourceNotFound` text for 404).
    public let fieldErrors: [String: String]
    public let location: SourceLocation

    public init(
        _ code: Code, _ message: String, fieldErrors: [String: String] = [:], file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.fieldErrors = fieldErrors
        self.location = SourceLocation(file: file, line: line)
    }

    public static func == (lhs: PaymentsError, rhs: PaymentsError) -> Bool { lhs.code == rhs.code }

    /// The Mangopay text for parameter errors.
    public static let parameterMessage =
        "One or several required parameters are missing or incorrect. An incorrect resource ID also raises this kind of error."

    /// A parameter error naming `fields`.
    public static func invalid(_ fields: [String: String], file: String = #fileID, line: Int = #line) -> PaymentsError {
        PaymentsError(.invalidParameters, parameterMessage, fieldErrors: fields, file: file, line: line)
    }

    /// A parameter error about one field.
    public static func invalid(
        _ field: String, _ problem: String, file: String = #fileID, line: Int = #line
    )
        -> PaymentsError
    {
        invalid([field: problem], file: file, line: line)
    }

    /// The 404 for a resource kind (`User`, `Card`) and id, in Mangopay's words and spelling.
    public static func notFound(_ kind: String, id: String, file: String = #fileID, line: Int = #line) -> PaymentsError
    {
        PaymentsError(
            .notFound, "The ressource does not exist",
            fieldErrors: [
                "RessourceNotFound": "Cannot found the ressource \(kind) with the id=\(Identifier.printable(id)) "
            ],
            file: file, line: line)
    }
}
