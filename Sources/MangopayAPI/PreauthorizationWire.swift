import Payments

/// Renders preauthorizations and deposit preauthorizations as Mangopay v2.01 JSON, and what a capture pay-in adds
/// to a pay-in (`PreauthorizationId` or `DepositId`).
extension MangopayWire {
    /// The members a capture pay-in adds: the hold it captured.
    static func captureMembers(_ payIn: PayIn) -> [(String, MangopayJSON)] {
        guard let source = payIn.capturedFrom else { return [] }
        return [(source.kind == .preauthorization ? "PreauthorizationId" : "DepositId", .string(source.id))]
    }

    static func preauthorization(_ payIn: PayIn, redirectURL: String?) -> MangopayJSON {
        let hold = payIn.hold
        let currency = payIn.debitedFunds.currency
        return .object(
            transactionMembers(payIn, redirectURL: redirectURL) + [
                ("DebitedFunds", funds(payIn.debitedFunds)),
                ("RemainingFunds", funds(Funds(currency: currency, amount: hold?.remaining ?? 0))),
                ("PaymentStatus", .string(hold?.paymentStatus.rawValue ?? "WAITING")),
                ("ExecutionType", .string("DIRECT")), ("PaymentType", .string("CARD")),
                ("ExpirationDate", .integer(hold?.expiresAt)), ("PayInId", .text(hold?.captures.last?.payInId)),
                ("MultiCapture", .bool(hold?.multiCapture ?? false)),
                ("AuthorizationDate", .integer(payIn.machine.state == .succeeded ? payIn.executionDate : nil)),
                ("SecurityInfo", .object([("AVSResult", .string("NO_CHECK"))])),
                ("StatementDescriptor", .text(payIn.statementDescriptor)), ("Billing", party(payIn.billing)),
                ("Shipping", party(payIn.shipping)), ("Type", .string("PREAUTHORIZATION")),
            ])
    }

    static func deposit(_ payIn: PayIn, redirectURL: String?) -> MangopayJSON {
        let hold = payIn.hold
        return .object(
            transactionMembers(payIn, redirectURL: redirectURL) + [
                ("DebitedFunds", funds(payIn.debitedFunds)),
                ("PaymentStatus", .string(hold?.paymentStatus.rawValue ?? "WAITING")),
                (
                    "PayinsLinked",
                    .object([
                        ("PayinCaptureId", .text(hold?.captures.first?.payInId)),
                        ("PayinComplementId", .text(hold?.complement?.payInId)),
                    ])
                ),
                ("ExpirationDate", .integer(hold?.expiresAt)), ("PaymentType", .string("CARD")),
                ("ExecutionType", .string("DIRECT")), ("StatementDescriptor", .text(payIn.statementDescriptor)),
                ("Billing", party(payIn.billing)), ("Shipping", party(payIn.shipping)),
            ])
    }

    static func hold(_ payIn: PayIn, redirectURL: String?) -> MangopayJSON {
        payIn.hold?.kind == .deposit
            ? deposit(payIn, redirectURL: redirectURL) : preauthorization(payIn, redirectURL: redirectURL)
    }
}
