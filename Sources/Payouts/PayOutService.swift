import Foundation
public import Payments
import VaultCore
public import VaultStore

/// Bank-wire pay-outs from a user's wallet or one of the client's wallets, in the sandbox's rules:
///
/// - A funded pay-out debits its wallet as it is created; its fees go to the client's `FEES` wallet of the
///   currency. The POST answers it `CREATED`; CardVault wires nothing, so it reads `SUCCEEDED` from then on
///   (events `PAYOUT_NORMAL_CREATED` and `PAYOUT_NORMAL_SUCCEEDED`).
/// - A wallet without the funds gives a `FAILED` pay-out (`001001`) that moves nothing (`PAYOUT_NORMAL_FAILED`).
/// - Every record is the client's own: another client's wallet, account or pay-out is not found.
public struct PayOutService: Sendable {
    let environment: PaymentsEnvironment

    public init(environment: PaymentsEnvironment) {
        self.environment = environment
    }

    /// Records that live as long as the merchant's data: bank accounts, pay-outs and client wallets.
    public static let recordLifetimes = [
        RecordLifetime(kept: Collections.bankAccounts, "with its owner, until the merchant's data is removed"),
        RecordLifetime(kept: Collections.bankAccountsByUser, "with its bank account"),
        RecordLifetime(kept: Collections.payOuts, "a business record, until the merchant's data is removed"),
        RecordLifetime(kept: Collections.clientWallets, "the client's balances, until its data is removed"),
    ]

    var now: Int64 { Int64(environment.clock.now.timeIntervalSince1970.rounded(.down)) }

    /// Creates a pay-out from user wallet `DebitedWalletId` to the user's bank account `BankAccountId`.
    /// - Throws: ``PaymentsError`` `.invalidParameters` naming every wrong field (or one that names another
    ///   user's, another currency's or an unknown resource).
    public func create(clientId: String, request: PayOutRequest) async throws -> PayOut {
        let problems = request.problems(client: false)
        guard problems.isEmpty else { throw PaymentsError.invalid(problems) }
        let account = try await bankAccount(clientId: clientId, request: request)
        let wallets = WalletService(environment: environment)
        let walletId = request.debitedWalletId!
        let wallet: Wallet
        do {
            wallet = try await wallets.get(clientId: clientId, id: walletId)
        } catch let error as PaymentsError where error.code == .notFound {
            // Only an unknown wallet is the request's fault; a store that cannot answer stays a store error.
            throw PaymentsError.invalid(
                "DebitedWalletId", "The wallet \(Identifier.printable(walletId)) does not exist.")
        }
        var fields = Self.matching(wallet.currency, request)
        if request.authorId != wallet.ownerId { fields["AuthorId"] = "The AuthorId must be the wallet's owner." }
        if account.userId != wallet.ownerId {
            fields["BankAccountId"] = "The bank account must be the wallet owner's."
        }
        guard fields.isEmpty else { throw PaymentsError.invalid(fields) }
        let debited = request.debitedFunds!
        let fees = request.fees!
        var made: PayOut?
        _ = try await wallets.debit(clientId: clientId, walletId: walletId, amount: debited.amount) { _, funded in
            var payOut = make(clientId: clientId, request, authorId: wallet.ownerId, funded: funded)
            payOut.creditedUserId = wallet.ownerId
            made = payOut
            var writes = try await record(payOut)
            if funded, fees.amount > 0 {
                // The fees go to the client's FEES wallet, in the same batch as the debit.
                let feesWallet = try await ClientWallets(environment: environment).read(
                    clientId: clientId, id: "FEES_" + fees.currency)
                guard let credit = try ClientWallets.write(feesWallet, change: fees.amount) else {
                    throw PaymentsError.invalid("Fees.Amount", "The client's FEES wallet would overflow.")
                }
                writes.append(credit.write)
            }
            return writes
        }
        return made!.asCreated
    }

    /// Creates a pay-out from the client's own wallet `DebitedWalletId` (`FEES_EUR`, `CREDIT_EUR`) to the
    /// client's bank account `BankAccountId`; the author is the client.
    public func createClientPayOut(clientId: String, request: PayOutRequest) async throws -> PayOut {
        let problems = request.problems(client: true)
        guard problems.isEmpty else { throw PaymentsError.invalid(problems) }
        let account = try await bankAccount(clientId: clientId, request: request)
        guard account.userId == nil else {
            throw PaymentsError.invalid("BankAccountId", "A client pay-out goes to one of the client's bank accounts.")
        }
        let walletId = request.debitedWalletId!
        guard let currency = ClientWallet.parse(walletId)?.currency else {
            throw PaymentsError.invalid(
                "DebitedWalletId", "The wallet \(Identifier.printable(walletId)) is not one of the client's wallets.")
        }
        let fields = Self.matching(currency, request)
        guard fields.isEmpty else { throw PaymentsError.invalid(fields) }
        let amount = request.debitedFunds!.amount
        return try await retryingOnConflict(
            attempts: 10,
            exhausted: PaymentsError(
                .concurrentChange, "The wallet kept changing under this pay-out; nothing was written")
        ) {
            let stored = try await ClientWallets(environment: environment).read(clientId: clientId, id: walletId)
            let debit = try ClientWallets.write(stored, change: -amount)
            let payOut = make(clientId: clientId, request, authorId: clientId, funded: debit != nil)
            var writes = try await record(payOut)
            if let debit { writes.append(debit.write) }
            try await environment.store.commit(writes)
            return payOut.asCreated
        }
    }

    /// The pay-out `id` of `clientId`.
    /// - Throws: ``PaymentsError`` `.notFound`.
    public func get(clientId: String, id: String) async throws -> PayOut {
        guard Identifier.isWellFormed(id),
            let found = try await environment.store.read(
                PayOut.self, Collections.payOuts, id: Identifier.scoped(clientId, id))
        else { throw PaymentsError.notFound("PayOut", id: id) }
        return found.value
    }

    // MARK: Parts

    func bankAccount(clientId: String, request: PayOutRequest) async throws -> BankAccount {
        let id = request.bankAccountId!
        let unknown = PaymentsError.invalid(
            "BankAccountId", "The bank account \(Identifier.printable(id)) does not exist.")
        let account: BankAccount
        do {
            account = try await BankAccountService(environment: environment).get(clientId: clientId, id: id)
        } catch let error as PaymentsError where error.code == .notFound {
            throw unknown
        }
        guard account.active else { throw unknown }
        return account
    }

    static func matching(_ currency: String, _ request: PayOutRequest) -> [String: String] {
        guard request.debitedFunds?.currency != currency else { return [:] }
        return ["DebitedFunds.Currency": "The currency must be the wallet's (\(currency))."]
    }

    func make(clientId: String, _ request: PayOutRequest, authorId: String, funded: Bool) -> PayOut {
        let result: (code: String, message: String) =
            funded ? ("000000", "Success") : ("001001", "Unsufficient wallet balance")
        let debited = request.debitedFunds!
        return PayOut(
            id: Identifier.make("payout_", random: environment.random), clientId: clientId, authorId: authorId,
            creditedUserId: nil, debitedWalletId: request.debitedWalletId!, bankAccountId: request.bankAccountId!,
            debitedFunds: debited, fees: request.fees ?? Funds(currency: debited.currency, amount: 0),
            bankWireRef: request.bankWireRef, tag: request.tag, status: funded ? "SUCCEEDED" : "FAILED",
            resultCode: result.code, resultMessage: result.message, creationDate: now,
            executionDate: funded ? now : nil, verificationId: Identifier.make("vop_", random: environment.random))
    }

    /// The pay-out's record and its events.
    func record(_ payOut: PayOut) async throws -> [RecordWrite] {
        let outcome: EventType = payOut.status == "SUCCEEDED" ? .payOutNormalSucceeded : .payOutNormalFailed
        return [
            .put(
                collection: Collections.payOuts, id: Identifier.scoped(payOut.clientId, payOut.id),
                value: try RecordCoding.encode(payOut), condition: .absent)
        ]
            + (try await EventLog.writes(
                [.payOutNormalCreated, outcome], resourceId: payOut.id, clientId: payOut.clientId,
                environment: environment))
    }
}
