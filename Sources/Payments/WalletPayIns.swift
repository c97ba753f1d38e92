import Foundation
import Risk
import VaultCore
import VaultCrypto
import VaultStore

/// The token a wallet (Apple Pay, Google Pay) hands the merchant's page: `PaymentData` on the wire.
public struct WalletPaymentData: Sendable, Equatable {
    public var transactionId: String?
    /// `VISA`, `MASTERCARD`, `AMEX`, ...
    public var network: String?
    /// The wallet's encrypted payment token (Apple's `EC_v1` JSON, Google's `ECv2` JSON, ...). Never stored or shown.
    public var tokenData: String?

    public init(transactionId: String? = nil, network: String? = nil, tokenData: String? = nil) {
        self.transactionId = transactionId
        self.network = network
        self.tokenData = tokenData
    }
}

/// What a merchant sends to create an Apple Pay or Google Pay direct pay-in.
public struct WalletPayInRequest: Sendable, Equatable {
    public var authorId: String?
    public var creditedUserId: String?
    public var creditedWalletId: String?
    public var debitedFunds: Funds?
    public var fees: Funds?
    public var paymentData: WalletPaymentData?
    /// Descriptor, tag, browser data, return URL, billing and shipping (funds and ids in it are not looked at).
    public var details: PayInRequest

    public init() { details = PayInRequest() }
}

/// The production boundary of wallet pay-ins: checking a token's signature against Apple's or Google's signing
/// chain and decrypting it into a network token and cryptogram. CardVault ships no implementation: in sandbox mode
/// the token's signature is not verified (``SandboxWalletTokens``); a production connector implements this protocol.
public protocol WalletTokenVerifier: Sendable {
    /// Verifies and opens `data` of wallet `kind`; throws when the signature or the token is not valid.
    func verify(_ data: WalletPaymentData, kind: PayInKind) throws -> VerifiedWalletToken
}

/// What a verified wallet token tells: its network and a stable id for the risk history (never the device number).
public struct VerifiedWalletToken: Sendable, Equatable {
    public var network: String
    public var transactionId: String

    public init(network: String, transactionId: String) {
        self.network = network
        self.transactionId = transactionId
    }
}

/// The sandbox's wallet tokens: the signature is NOT verified; the structure must be there (a transaction id, a
/// known network and some token data). Documented as sandbox-only in docs/payins.md.
public struct SandboxWalletTokens: WalletTokenVerifier {
    public static let networks = ["VISA", "MASTERCARD", "AMEX", "CB", "MAESTRO", "DISCOVER", "JCB"]

    public init() {}

    public func verify(_ data: WalletPaymentData, kind: PayInKind) throws -> VerifiedWalletToken {
        var rules = FieldRules()
        rules.required(data.transactionId, "PaymentData.TransactionId", maximum: 255)
        rules.required(data.network, "PaymentData.Network", maximum: 20)
        rules.oneOf(data.network?.uppercased(), Self.networks, "PaymentData.Network")
        if data.tokenData?.isEmpty ?? true {
            rules.fail("PaymentData.TokenData", "The PaymentData.TokenData field is required.")
        }
        if let token = data.tokenData, token.utf8.count > 65_536 {
            rules.fail("PaymentData.TokenData", "The PaymentData.TokenData is too long.")
        }
        try rules.check()
        return VerifiedWalletToken(network: data.network!.uppercased(), transactionId: data.transactionId!)
    }
}

extension PayInService {
    /// Creates an Apple Pay or Google Pay direct pay-in. The wallet authenticated the shopper (device biometrics),
    /// so there is no 3-D Secure challenge; the result follows the sandbox table: the risk engine's block (008500), or
    /// the rule named `<PaymentType>:<Network>` (`APPLEPAY:VISA`) in the sandbox cards table, else success.
    /// - Throws: ``PaymentsError`` `.invalidParameters` naming every wrong field (the token's too).
    public func createWalletPayIn(
        clientId: String, kind: PayInKind, request: WalletPayInRequest,
        verifier: any WalletTokenVerifier = SandboxWalletTokens()
    ) async throws -> PayIn {
        precondition(!kind.usesVaultedCard, "wallet pay-ins only")
        var rules = FieldRules()
        rules.required(request.authorId, "AuthorId", maximum: 100)
        rules.required(request.creditedWalletId, "CreditedWalletId", maximum: 100)
        rules.funds(request.debitedFunds, "DebitedFunds", allowZero: false)
        rules.funds(request.fees, "Fees", allowZero: true)
        rules.length(request.details.tag, "Tag")
        if request.paymentData == nil { rules.fail("PaymentData", "The PaymentData field is required.") }
        if let descriptor = request.details.statementDescriptor, descriptor.isEmpty || descriptor.utf8.count > 10 {
            rules.fail("StatementDescriptor", "The StatementDescriptor must be 1 to 10 letters, digits or spaces.")
        }
        if let ip = request.details.ipAddress, !Self.isIPAddress(ip) {
            rules.fail("IpAddress", "The IpAddress must be an IPv4 or IPv6 address.")
        }
        try rules.check()
        let key = try environment.fingerprintKeys.fingerprintKey(forClient: clientId)
        var data = request.paymentData!
        if kind == .googlePay, data.transactionId == nil, let tokenData = data.tokenData, !tokenData.isEmpty {
            // Google Pay's newer call sends the token alone: its id is a keyed hash of it (the token is not kept), and
            // the sandbox takes the preferred network, or Visa's.
            data.transactionId =
                "gpay_"
                + Identifier.hex(HMACSHA256.authenticationCode(for: Array(tokenData.utf8), using: key).prefix(16))
            data.network = data.network ?? request.details.preferredCardNetwork ?? "VISA"
        }
        let token = try verifier.verify(data, kind: kind)

        guard try await users.exists(clientId: clientId, id: request.authorId!) else {
            throw PaymentsError.invalid(
                "AuthorId", "The user \(Identifier.printable(request.authorId!)) does not exist.")
        }
        guard let wallet = try await wallets.read(clientId: clientId, id: request.creditedWalletId!)?.value else {
            throw PaymentsError.invalid(
                "CreditedWalletId", "The wallet \(Identifier.printable(request.creditedWalletId!)) does not exist.")
        }
        let debited = request.debitedFunds!
        let fees = request.fees!
        rules.credit(of: wallet, debited: debited, fees: fees, creditedUserId: request.creditedUserId)
        try rules.check()

        // The risk history's card key: a keyed hash of the wallet's transaction id under the client's key.
        let fingerprint =
            "w"
            + Identifier.hex(
                HMACSHA256.authenticationCode(for: Array((kind.rawValue + ":" + token.transactionId).utf8), using: key)
                    .prefix(15))
        let rule = sandbox.cards[kind.paymentType + ":" + token.network]
        let linked = LinkedPayIn(
            kind: kind, card: nil, wallet: wallet, authorId: request.authorId!, creditedUserId: wallet.ownerId,
            debited: debited, fees: fees, request: request.details, recurringRegistrationId: nil,
            walletNetwork: token.network, walletTransactionId: token.transactionId, fingerprint: fingerprint,
            cardInfo: CardInfo(
                bin: "", issuingBank: nil, issuerCountryCode: nil, type: nil, brand: token.network, subType: nil)
        ) { risk, _ in
            if risk.decision == .block { return .decline(.blockedByFraudPolicy) }
            if rule?.flow == .decline {
                let code = rule?.resultCode ?? ResultCode.doNotHonor.code
                return .decline(ResultCode.known[code] ?? ResultCode(code: code, message: "Transaction refused"))
            }
            return .frictionless
        }
        return try await createLinked(clientId: clientId, linked) { _ in [] }
    }
}
