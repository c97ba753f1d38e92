import HTTPServer
import OwnerAccounts
import Payments
import Payouts

/// The wire forms of bank accounts, pay-outs, client wallets and KYC documents, and the binding of their requests.
extension PayOutRoutes {
    static func bankAccountRequest(_ request: Request) throws -> BankAccountRequest {
        var body = try MangopayFields(body: request.body)
        let account = BankAccountRequest(
            ownerName: body.string("OwnerName"), ownerAddress: body.address("OwnerAddress"), iban: body.string("IBAN"),
            bic: body.string("BIC"), tag: body.string("Tag"))
        try body.check()
        return account
    }

    static func payOutRequest(_ request: Request) throws -> PayOutRequest {
        var body = try MangopayFields(body: request.body)
        let payOut = PayOutRequest(
            authorId: body.string("AuthorId"), debitedWalletId: body.string("DebitedWalletId"),
            bankAccountId: body.string("BankAccountId"), debitedFunds: body.money("DebitedFunds"),
            fees: body.money("Fees"), bankWireRef: body.string("BankWireRef"), tag: body.string("Tag"))
        try body.check()
        return payOut
    }

    static func bankAccount(_ account: BankAccount) -> MangopayJSON {
        .object([
            ("Id", .string(account.id)), ("Tag", .text(account.tag)), ("CreationDate", .int(account.creationDate)),
            ("UserId", .text(account.userId)), ("Type", .string(account.type)),
            ("OwnerName", .string(account.ownerName)), ("OwnerAddress", MangopayWire.address(account.ownerAddress)),
            ("IBAN", .string(account.iban)), ("BIC", .text(account.bic)), ("Active", .bool(account.active)),
        ])
    }

    static func payOut(_ payOut: PayOut) -> MangopayJSON {
        .object([
            ("Id", .string(payOut.id)), ("Tag", .text(payOut.tag)), ("CreationDate", .int(payOut.creationDate)),
            ("AuthorId", .string(payOut.authorId)), ("CreditedUserId", .text(payOut.creditedUserId)),
            ("DebitedFunds", MangopayWire.funds(payOut.debitedFunds)),
            ("CreditedFunds", MangopayWire.funds(payOut.creditedFunds)), ("Fees", MangopayWire.funds(payOut.fees)),
            ("Status", .string(payOut.status)), ("ResultCode", .string(payOut.resultCode)),
            ("ResultMessage", .string(payOut.resultMessage)), ("ExecutionDate", .integer(payOut.executionDate)),
            ("Type", .string("PAYOUT")), ("Nature", .string("REGULAR")), ("PaymentType", .string("BANK_WIRE")),
            ("ExecutionType", .null), ("CreditedWalletId", .null), ("DebitedWalletId", .string(payOut.debitedWalletId)),
            ("BankAccountId", .string(payOut.bankAccountId)), ("BankWireRef", .text(payOut.bankWireRef)),
            ("PayoutModeRequested", .string("STANDARD")), ("ModeRequested", .string("STANDARD")),
            ("ModeApplied", .string("STANDARD")), ("FallbackReason", .null), ("PaymentRef", .null),
            (
                "RecipientVerificationOfPayee",
                .object([
                    ("RecipientVerificationId", .string(payOut.verificationId)),
                    ("RecipientVerificationCheck", .string("MATCH_NOT_POSSIBLE")),
                    ("RecipientVerificationMessage", .string("CardVault's sandbox verifies no payee.")),
                ])
            ),
        ])
    }

    static func clientWallet(_ wallet: ClientWallet) -> MangopayJSON {
        .object([
            ("Balance", MangopayWire.funds(Funds(currency: wallet.currency, amount: wallet.balance))),
            ("Currency", .string(wallet.currency)), ("FundsType", .string(wallet.fundsType)),
            ("Id", .string(wallet.id)), ("Tag", .null), ("CreationDate", .int(wallet.creationDate)),
        ])
    }

    static func kycDocument(_ document: KycDocument) -> MangopayJSON {
        .object([
            ("Id", .string(document.id)), ("Tag", .text(document.tag)), ("CreationDate", .int(document.creationDate)),
            ("UserId", .string(document.userId)), ("Type", .string(document.type)),
            ("Status", .string(document.status)),
            ("RefusedReasonType", .null), ("RefusedReasonMessage", .null), ("ProcessedDate", .null),
            ("Flags", .array([])),
        ])
    }
}
