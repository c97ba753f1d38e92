public import Payments

/// A bank-wire pay-out: funds taken from a wallet (a user's, or one of the client's own) and wired to a bank
/// account. CardVault wires nothing: the sandbox settles a funded pay-out as it is created.
public struct PayOut: Sendable, Equatable, Codable {
    public var id: String
    public var clientId: String
    /// The user at the source (the wallet's owner), or the client id for a client pay-out.
    public var authorId: String
    public var creditedUserId: String?
    public var debitedWalletId: String
    public var bankAccountId: String
    public var debitedFunds: Funds
    public var fees: Funds
    public var bankWireRef: String?
    public var tag: String?
    /// `CREATED` as the POST answers it, then `SUCCEEDED`; `FAILED` with ``resultCode`` when not funded.
    public var status: String
    public var resultCode: String
    public var resultMessage: String
    public var creationDate: Int64
    public var executionDate: Int64?
    /// The id of the Verification of Payee answer; CardVault verifies no payee (`MATCH_NOT_POSSIBLE`).
    public var verificationId: String

    /// What the bank account receives: the debited funds less the fees.
    public var creditedFunds: Funds {
        Funds(currency: debitedFunds.currency, amount: debitedFunds.amount &- fees.amount)
    }

    /// This pay-out as its POST answers it: created, not yet executed.
    public var asCreated: PayOut {
        guard status == "SUCCEEDED" else { return self }
        var created = self
        created.status = "CREATED"
        created.executionDate = nil
        return created
    }
}

/// What a merchant sends to create a bank-wire pay-out.
public struct PayOutRequest: Sendable, Equatable {
    public var authorId: String?
    public var debitedWalletId: String?
    public var bankAccountId: String?
    public var debitedFunds: Funds?
    public var fees: Funds?
    public var bankWireRef: String?
    public var tag: String?

    public init(
        authorId: String? = nil, debitedWalletId: String? = nil, bankAccountId: String? = nil,
        debitedFunds: Funds? = nil, fees: Funds? = nil, bankWireRef: String? = nil, tag: String? = nil
    ) {
        self.authorId = authorId
        self.debitedWalletId = debitedWalletId
        self.bankAccountId = bankAccountId
        self.debitedFunds = debitedFunds
        self.fees = fees
        self.bankWireRef = bankWireRef
        self.tag = tag
    }

    /// The problems of the request's own fields (not what they refer to), by wire field.
    func problems(client: Bool) -> [String: String] {
        var fields: [String: String] = [:]
        if !client, authorId == nil { fields["AuthorId"] = "The AuthorId field is required." }
        if debitedWalletId == nil { fields["DebitedWalletId"] = "The DebitedWalletId field is required." }
        if bankAccountId == nil { fields["BankAccountId"] = "The BankAccountId field is required." }
        if let funds = debitedFunds {
            if funds.amount <= 0 || funds.amount > Funds.maximumAmount {
                fields["DebitedFunds.Amount"] = "The DebitedFunds.Amount must be between 1 and \(Funds.maximumAmount)."
            }
        } else {
            fields["DebitedFunds"] = "The DebitedFunds field is required."
        }
        if let fees {
            if fees.amount < 0 || fees.amount > Funds.maximumAmount {
                fields["Fees.Amount"] = "The Fees.Amount must be between 0 and \(Funds.maximumAmount)."
            } else if let funds = debitedFunds, fees.amount > funds.amount {
                fields["Fees.Amount"] = "The Fees cannot be above the DebitedFunds."
            } else if client, fees.amount != 0 {
                fields["Fees.Amount"] = "A client pay-out takes no fees."
            }
            if let funds = debitedFunds, fees.currency != funds.currency {
                fields["Fees.Currency"] = "The Fees must be in the DebitedFunds' currency."
            }
        } else if !client {
            fields["Fees"] = "The Fees field is required."
        }
        if let ref = bankWireRef, ref.utf8.count > 255 { fields["BankWireRef"] = "The BankWireRef is too long." }
        if let tag, tag.utf8.count > 255 { fields["Tag"] = "The Tag is too long." }
        return fields
    }
}
