/// The results of card transactions (pay-ins, validations, refunds). Declines are HTTP 200 with
/// `Status: "FAILED"` and one of these.
extension ResultCode {
    public static let authenticationFailed = ResultCode(
        code: "101301", message: "Secure mode: 3DSecure authentication has failed")
    public static let authenticationExpired = ResultCode(
        code: "101304", message: "Secure mode: The 3DSecure authentication session has expired")
    public static let authenticationUnavailable = ResultCode(
        code: "101399", message: "Secure mode: 3DSecure authentication is not available")
    public static let blockedByFraudPolicy = ResultCode(
        code: "008500", message: "Transaction blocked by Fraud Policy")
    public static let doNotHonor = ResultCode(
        code: "101101", message: "Transaction refused by the bank (Do not honor)")
    public static let cardInactive = ResultCode(code: "101106", message: "The card is inactive")
    public static let cardExpired = ResultCode(code: "101105", message: "The card has expired")
    public static let fraudSuspectedByBank = ResultCode(
        code: "008006", message: "Fraud suspected by the bank")
    public static let payPalCancelled = ResultCode(code: "001031", message: "User canceled the payment")
    public static let payPalExpired = ResultCode(
        code: "001034", message: "User has let the payment session expire without paying")
    public static let insufficientBalance = ResultCode(code: "001001", message: "Unsufficient wallet balance")
    public static let refundedFeesAboveInitialFees = ResultCode(
        code: "005404", message: "The refunded fees cannot exceed initial fee amount")

    /// The known results by code, for configuration that names a code only.
    public static let known: [String: ResultCode] = Dictionary(
        uniqueKeysWithValues: [
            success, authenticationFailed, authenticationExpired, authenticationUnavailable, blockedByFraudPolicy,
            doNotHonor, cardInactive, cardExpired, fraudSuspectedByBank, insufficientBalance, payPalCancelled,
            payPalExpired,
            ResultCode(code: "101102", message: "Transaction refused by the bank (Amount limit)"),
            ResultCode(code: "101104", message: "Transaction refused by the bank (card limit reached)"),
            ResultCode(code: "101199", message: "Transaction refused"),
            ResultCode(code: "008001", message: "Counterfeit Card"),
            ResultCode(code: "008002", message: "Lost Card"),
            ResultCode(code: "008003", message: "Stolen Card"),
            ResultCode(code: "009199", message: "PSP technical error"),
        ].map { ($0.code, $0) })
}
