import CardVaultTesting
import Payments
import Testing
import VaultCore
import VaultStore

@testable import Payouts

/// Pay-outs against an in-memory store: the debit, its fees, the sandbox's statuses and the client boundary.
@Suite struct PayOutServiceTests {
    let store = InMemoryRecordStore()
    let environment: PaymentsEnvironment
    let services: MerchantServices

    init() {
        environment = PaymentsEnvironment.testing(store: store)
        services = MerchantServices(environment: environment)
    }

    var payOuts: PayOutService { PayOutService(environment: environment) }

    static let address = Address(addressLine1: "1 rue de la Paix", city: "Paris", postalCode: "75002", country: "FR")

    /// A user with an EUR wallet holding `balance` and an IBAN account, in client `clientId`.
    func owner(_ clientId: String = "shop", balance: Int64) async throws -> (User, Wallet, BankAccount) {
        var fields = UserFields()
        fields.firstName = "John"
        fields.lastName = "Doe"
        fields.email = "john@example.com"
        let user = try await services.users.create(clientId: clientId, type: .natural, sca: false, fields: fields)
        let wallet = try await services.wallets.create(
            clientId: clientId, owners: [user.id], description: "EUR", currency: "EUR", tag: nil)
        try await setBalance(clientId: clientId, walletId: wallet.id, balance)
        let account = try await BankAccountService(environment: environment).create(
            clientId: clientId, userId: user.id,
            request: BankAccountRequest(
                ownerName: "John Doe", ownerAddress: Self.address, iban: "FR76 3000 4000 0312 3456 7890 143",
                bic: "BNPAFRPP"))
        return (user, wallet, account)
    }

    func setBalance(clientId: String, walletId: String, _ balance: Int64) async throws {
        let found = try #require(
            try await store.read(Wallet.self, Collections.wallets, id: clientId + ":" + walletId))
        var wallet = found.value
        wallet.balance = balance
        _ = try await store.commit([
            .put(
                collection: Collections.wallets, id: clientId + ":" + walletId, value: try RecordCoding.encode(wallet),
                condition: .version(found.version))
        ])
    }

    func request(_ user: User, _ wallet: Wallet, _ account: BankAccount, amount: Int64, fees: Int64) -> PayOutRequest {
        PayOutRequest(
            authorId: user.id, debitedWalletId: wallet.id, bankAccountId: account.id,
            debitedFunds: Funds(currency: "EUR", amount: amount), fees: Funds(currency: "EUR", amount: fees),
            bankWireRef: "invoice 1")
    }

    func balance(_ walletId: String, of clientId: String = "shop") async throws -> Int64 {
        try await services.wallets.get(clientId: clientId, id: walletId).balance
    }

    func events(_ clientId: String = "shop", of resourceId: String) async throws -> [EventType] {
        try await store.scanAll(Collections.events, prefix: clientId + ":").map {
            try RecordCoding.decode(PaymentEvent.self, from: $0)
        }.filter { $0.resourceId == resourceId }.map(\.eventType)
    }

    /// Expects `body` to be refused with a parameter error naming `field` (the error type compares codes only).
    func refused<T>(_ field: String, _ body: () async throws -> T) async {
        do {
            _ = try await body()
            Issue.record("accepted; expected \(field) to be refused")
        } catch let error as PaymentsError {
            #expect(error.code == .invalidParameters && error.fieldErrors[field] != nil, "\(error.fieldErrors)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func aFundedPayOutDebitsTheWalletAndPaysTheFeesToTheClient() async throws {
        let (user, wallet, account) = try await owner(balance: 1_000)
        let payOut = try await payOuts.create(
            clientId: "shop", request: request(user, wallet, account, amount: 300, fees: 20))
        #expect(payOut.status == "CREATED")
        #expect(payOut.executionDate == nil)
        #expect(payOut.creditedFunds.amount == 280)
        #expect(try await balance(wallet.id) == 700)
        let stored = try await payOuts.get(clientId: "shop", id: payOut.id)
        #expect(stored.status == "SUCCEEDED" && stored.resultCode == "000000" && stored.executionDate != nil)
        let fees = try await ClientWallets(environment: environment).read(clientId: "shop", id: "FEES_EUR")
        #expect(fees.value.balance == 20)
        #expect(try await events(of: payOut.id) == [.payOutNormalCreated, .payOutNormalSucceeded])
    }

    @Test func insufficientFundsFailWithMangopaysCodeAndMoveNothing() async throws {
        let (user, wallet, account) = try await owner(balance: 99)
        let payOut = try await payOuts.create(
            clientId: "shop", request: request(user, wallet, account, amount: 100, fees: 5))
        #expect(payOut.status == "FAILED")
        #expect(payOut.resultCode == "001001")
        #expect(payOut.resultMessage == "Unsufficient wallet balance")
        #expect(try await balance(wallet.id) == 99)
        let fees = try await ClientWallets(environment: environment).read(clientId: "shop", id: "FEES_EUR")
        #expect(fees.value.balance == 0 && fees.version == 0)
        #expect(try await events(of: payOut.id) == [.payOutNormalCreated, .payOutNormalFailed])
    }

    @Test func amountsOutOfRangeAndAFeesWalletOverflowAreRefused() async throws {
        let (user, wallet, account) = try await owner(balance: Int64.max)
        await refused("DebitedFunds.Amount") {
            try await payOuts.create(
                clientId: "shop", request: request(user, wallet, account, amount: Int64.max, fees: 0))
        }
        await refused("Fees.Amount") {
            try await payOuts.create(clientId: "shop", request: request(user, wallet, account, amount: 10, fees: -1))
        }
        await refused("Fees.Amount") {
            try await payOuts.create(clientId: "shop", request: request(user, wallet, account, amount: 10, fees: 11))
        }
        // The client's FEES wallet near the top of Int64: crediting the fees would overflow, so nothing moves.
        let fees = try await ClientWallets(environment: environment).read(clientId: "shop", id: "FEES_EUR")
        let (write, _) = try #require(try ClientWallets.write(fees, change: Int64.max - 5))
        _ = try await store.commit([write])
        await refused("Fees.Amount") {
            try await payOuts.create(clientId: "shop", request: request(user, wallet, account, amount: 100, fees: 10))
        }
        #expect(try await balance(wallet.id) == Int64.max)
    }

    @Test func anotherClientsWalletOrAccountIsRefused() async throws {
        let (user, wallet, account) = try await owner("shop", balance: 1_000)
        let (otherUser, otherWallet, otherAccount) = try await owner("other", balance: 1_000)
        // Another client's wallet, with this client's user and account.
        await refused("DebitedWalletId") {
            try await payOuts.create(
                clientId: "shop", request: request(user, otherWallet, account, amount: 10, fees: 0))
        }
        // Another client's bank account.
        await refused("BankAccountId") {
            try await payOuts.create(
                clientId: "shop", request: request(user, wallet, otherAccount, amount: 10, fees: 0))
        }
        // Everything of the other client, asked for by this one.
        await refused("BankAccountId") {
            try await payOuts.create(
                clientId: "shop", request: request(otherUser, otherWallet, otherAccount, amount: 10, fees: 0))
        }
        #expect(try await balance(otherWallet.id, of: "other") == 1_000)
        let made = try await payOuts.create(
            clientId: "other", request: request(otherUser, otherWallet, otherAccount, amount: 10, fees: 0))
        await #expect(throws: PaymentsError.notFound("PayOut", id: made.id)) {
            try await payOuts.get(clientId: "shop", id: made.id)
        }
    }

    @Test func anotherUsersAccountIsRefused() async throws {
        let (user, wallet, _) = try await owner(balance: 1_000)
        let (_, _, otherAccount) = try await owner(balance: 0)
        await refused("BankAccountId") {
            try await payOuts.create(
                clientId: "shop", request: request(user, wallet, otherAccount, amount: 10, fees: 0))
        }
        #expect(try await balance(wallet.id) == 1_000)
    }

    @Test func aClientPayOutDebitsTheClientsFeesWallet() async throws {
        let (user, wallet, account) = try await owner(balance: 1_000)
        _ = try await payOuts.create(clientId: "shop", request: request(user, wallet, account, amount: 500, fees: 50))
        let clientAccount = try await BankAccountService(environment: environment).create(
            clientId: "shop", userId: nil,
            request: BankAccountRequest(
                ownerName: "Shop", ownerAddress: Self.address, iban: "FR7630004000031234567890143"))
        func clientPayOut(_ amount: Int64, wallet: String = "FEES_EUR", account: String? = nil) async throws -> PayOut {
            try await payOuts.createClientPayOut(
                clientId: "shop",
                request: PayOutRequest(
                    debitedWalletId: wallet, bankAccountId: account ?? clientAccount.id,
                    debitedFunds: Funds(currency: "EUR", amount: amount)))
        }
        #expect(try await clientPayOut(30).status == "CREATED")
        #expect(try await clientPayOut(21).resultCode == "001001")
        #expect(try await clientPayOut(20).status == "CREATED")
        let wallets = try await ClientWallets(environment: environment).list(clientId: "shop")
        #expect(wallets.map(\.id) == ["FEES_EUR", "CREDIT_EUR"])
        #expect(wallets.map(\.balance) == [0, 0])
        // A user's account, or a wallet that is no client wallet, is refused.
        await refused("BankAccountId") { try await clientPayOut(1, account: account.id) }
        await refused("DebitedWalletId") { try await clientPayOut(1, wallet: wallet.id) }
        await refused("DebitedFunds.Currency") {
            try await clientPayOut(1, wallet: "FEES_GBP")
        }
    }

    @Test func bankAccountsAreCheckedAndScopedPerClient() async throws {
        let accounts = BankAccountService(environment: environment)
        let (user, _, account) = try await owner(balance: 0)
        #expect(account.iban == "FR7630004000031234567890143")
        do {
            _ = try await accounts.create(
                clientId: "shop", userId: user.id,
                request: BankAccountRequest(
                    ownerName: "", ownerAddress: nil, iban: "FR7630004000031234567890144", bic: "BNPA"))
            Issue.record("an invalid account was registered")
        } catch let error as PaymentsError {
            #expect(Set(error.fieldErrors.keys) == ["OwnerName", "OwnerAddress", "IBAN", "BIC"])
            #expect(!error.fieldErrors.values.contains { $0.contains("3000") })
        }
        #expect(try await accounts.list(clientId: "shop", userId: user.id, page: PageRequest()).items == [account])
        await #expect(throws: PaymentsError.notFound("BankAccount", id: account.id)) {
            try await accounts.get(clientId: "other", id: account.id)
        }
    }
}
