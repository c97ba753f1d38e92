import Foundation
public import VaultCore

/// What a merchant sends to create a web card pay-in (`POST /payins/card/web`).
public struct WebPayInRequest: Sendable, Equatable {
    public var authorId: String?
    public var creditedUserId: String?
    public var creditedWalletId: String?
    public var debitedFunds: Funds?
    public var fees: Funds?
    public var returnURL: String?
    public var cardType: String?
    public var secureMode: String?
    public var culture: String?
    public var statementDescriptor: String?
    public var tag: String?

    public init() {}
}

/// A web card pay-in: the merchant sends the shopper to CardVault's hosted payment page (`RedirectURL`), the page
/// tokenizes the card, pays with it (a direct pay-in, 3-D Secure through the sandbox ACS when needed) and sends
/// the shopper back to `ReturnURL` with `transactionId`. Stored as JSON in ``Collections/webPayIns``.
public struct WebPayIn: Sendable, Equatable, Codable {
    public var id: String
    public var clientId: String
    public var authorId: String
    public var creditedUserId: String?
    public var creditedWalletId: String
    public var debitedFunds: Funds
    public var fees: Funds
    public var returnURL: String
    public var cardType: String
    public var secureMode: String
    public var culture: String?
    public var statementDescriptor: String?
    public var tag: String?
    /// The single-use secret of the payment page link; cleared once the pay-in is final.
    public var pageSecret: String?
    /// `CREATED`, `SUCCEEDED` or `FAILED`.
    public var status: String
    public var result: ResultCode?
    /// The direct pay-in that charged the card (its wallet credit is this pay-in's).
    public var payInId: String?
    /// The card the page tokenized.
    public var cardId: String?
    public var creationDate: Int64
    public var executionDate: Int64?
    /// Unix seconds after which the page no longer takes a card.
    public var expirationDate: Int64

    /// `DebitedFunds - Fees`.
    public var creditedFunds: Funds {
        Funds(currency: debitedFunds.currency, amount: debitedFunds.amount - fees.amount)
    }

    public var isFinal: Bool { status != "CREATED" }
}

/// What the page needs to show (never the page secret or card data).
public struct WebPayInPageView: Sendable, Equatable {
    public var payIn: WebPayIn
    public var merchantName: String
}

/// How a payment page submission continues.
public enum WebPayInStep: Sendable, Equatable {
    /// Show the form again with these field errors (field name → sentence).
    case form(WebPayInPageView, errors: [(String, String)])
    /// Send the browser here (the ACS page, or the merchant's return URL).
    case redirect(String)

    public static func == (a: WebPayInStep, b: WebPayInStep) -> Bool {
        switch (a, b) {
        case (.redirect(let x), .redirect(let y)): x == y
        case (.form(let x, let e), .form(let y, let f)):
            x == y && e.map(\.0) == f.map(\.0) && e.map(\.1) == f.map(\.1)
        default: false
        }
    }
}

/// The card as the shopper typed it on the payment page.
public struct WebPayInCardInput: Sendable {
    public var number: Redacted<String>
    public var expiry: String
    public var securityCode: Redacted<String>
    public var holderName: String

    public init(number: Redacted<String>, expiry: String, securityCode: Redacted<String>, holderName: String) {
        self.number = number
        self.expiry = expiry
        self.securityCode = securityCode
        self.holderName = holderName
    }
}
