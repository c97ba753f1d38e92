/// The outcome of a transaction as the Mangopay dialect reports it: a 6-digit `ResultCode` string
/// and its `ResultMessage`. Declines are HTTP 200 with `Status: "FAILED"` and one of these.
public struct TransactionResult: Sendable, Hashable, Codable {
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public static let success = TransactionResult(code: "000000", message: "Success")
    public static let authenticationFailed = TransactionResult(
        code: "101301", message: "Secure mode: 3DSecure authentication has failed")
    public static let authenticationExpired = TransactionResult(
        code: "101304", message: "Secure mode: The 3DSecure authentication session has expired")
    public static let authenticationUnavailable = TransactionResult(
        code: "101399", message: "Secure mode: 3DSecure authentication is not available")
    public static let blockedByFraudPolicy = TransactionResult(
        code: "008500", message: "Transaction blocked by Fraud Policy")
    public static let doNotHonor = TransactionResult(
        code: "101101", message: "Transaction refused by the bank (Do not honor)")
    public static let cardInactive = TransactionResult(code: "101106", message: "The card is inactive")
    public static let cardExpired = TransactionResult(code: "101105", message: "The card has expired")
    public static let fraudSuspectedByBank = TransactionResult(
        code: "008006", message: "Fraud suspected by the bank")
    public static let insufficientBalance = TransactionResult(code: "001001", message: "Unsufficient wallet balance")

    /// The known results by code, for configuration that names a code only.
    public static let known: [String: TransactionResult] = Dictionary(
        uniqueKeysWithValues: [
            success, authenticationFailed, authenticationExpired, authenticationUnavailable, blockedByFraudPolicy,
            doNotHonor, cardInactive, cardExpired, fraudSuspectedByBank, insufficientBalance,
            TransactionResult(code: "101102", message: "Transaction refused by the bank (Amount limit)"),
            TransactionResult(code: "101104", message: "Transaction refused by the bank (card limit reached)"),
            TransactionResult(code: "101199", message: "Transaction refused"),
            TransactionResult(code: "008001", message: "Counterfeit Card"),
            TransactionResult(code: "008002", message: "Lost Card"),
            TransactionResult(code: "008003", message: "Stolen Card"),
            TransactionResult(code: "009199", message: "PSP technical error"),
        ].map { ($0.code, $0) })
}
