import CardKit
import Foundation
import Risk
import Testing
import VaultCore
import VaultCrypto
import VaultStore

@testable import Payments

/// Every writer of a wallet keeps its balance exact while credits are handed on from turn to turn
/// (``HotRecordQueue``): refunds' debits and wallet updates take the wallet's turn too, a credit whose commit
/// failed hands nothing on, and two daemons sharing one store (each with turns of its own) lose no credit.
@Suite struct WalletWritersTests {
    /// A merchant with one shopper (user, card) and one wallet, on `store`.
    struct Shop {
        let services: MerchantServices
        let payer: String
        let wallet: String
        let card: String

        static func services(store: any RecordStore, fingerprintKeys: any FingerprintKeySource) -> MerchantServices {
            var policy = RiskPolicy()
            policy.maxPerCard = 1_000_000
            policy.maxPerUser = 1_000_000
            policy.maxPerIP = 1_000_000
            policy.maxPerDevice = 1_000_000
            return MerchantServices(
                environment: PaymentsEnvironment(
                    store: store, clock: SystemClock(), random: RandomPool(), fingerprintKeys: fingerprintKeys,
                    configuration: PaymentsConfiguration(publicBaseURL: "https://vault.example/"), logger: .disabled),
                riskPolicy: policy)
        }

        static func open(store: any RecordStore, fingerprintKeys: any FingerprintKeySource) async throws -> Shop {
            let services = services(store: store, fingerprintKeys: fingerprintKeys)
            let payer = try await payer(services)
            let wallet = try await services.wallets.create(
                clientId: "shop", owners: [payer.id], description: "seller", currency: "EUR", tag: nil)
            let registration = try await services.cardRegistrations.create(
                clientId: "shop", userId: payer.id, currency: "EUR", cardType: nil, tag: nil)
            let card = try #require(
                try await services.cardRegistrations.update(
                    clientId: "shop", id: registration.id, registrationData: try await tokenize(registration, services),
                    cardHolderName: nil, tag: nil
                ).cardId)
            return Shop(services: services, payer: payer.id, wallet: wallet.id, card: card)
        }

        /// A new natural user of client `shop`.
        static func payer(_ services: MerchantServices) async throws -> User {
            var fields = UserFields()
            fields.firstName = "Pay"
            fields.lastName = "Er"
            fields.email = "payer@example.com"
            return try await services.users.create(clientId: "shop", type: .natural, sca: false, fields: fields)
        }

        /// Tokenizes the frictionless sandbox card for `registration`; returns its `RegistrationData` (`data=…`).
        static func tokenize(_ registration: CardRegistration, _ services: MerchantServices) async throws -> String {
            guard
                case .success(let token, _) = try await services.cardRegistrations.tokenize(
                    clientId: "shop", id: registration.id,
                    form: TokenizationForm(
                        data: registration.preregistrationData, accessKeyRef: registration.accessKey,
                        cardNumber: "4970107111111119", cardExpirationDate: "1229", cardCvx: "123"),
                    signals: DeviceSignals(ipAddress: "192.0.2.7"))
            else { throw PaymentsError(.invalidState, "tokenization failed") }
            return "data=" + token.unsafeRevealed
        }

        /// A frictionless pay-in of `amount` (fees 100) through `services`; nil when it was refused for concurrent
        /// changes (nothing is written then).
        func pay(_ amount: Int64, through services: MerchantServices) async throws -> PayIn? {
            var request = PayInRequest()
            request.authorId = payer
            request.creditedWalletId = wallet
            request.debitedFunds = Funds(currency: "EUR", amount: amount)
            request.fees = Funds(currency: "EUR", amount: 100)
            request.cardId = card
            request.secureModeReturnURL = "https://shop.example/return"
            request.ipAddress = "192.0.2.7"
            request.browserInfo = BrowserInfo(acceptHeader: "text/html", userAgent: "UA/1")
            do {
                return try await services.payIns.create(clientId: "shop", request: request)
            } catch let error as PaymentsError where error.code == .concurrentChange {
                return nil
            }
        }

        var balance: Int64 {
            get async throws { try await services.wallets.get(clientId: "shop", id: wallet).balance }
        }
    }

    static func fileStore() throws -> (store: EncryptedFileStore, directory: String) {
        let directory = NSTemporaryDirectory() + "cv-wallet-writers-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        _ = try KeyRing.createMasterKey(keysDirectory: directory + "/keys")
        return (
            try EncryptedFileStore.open(directory: directory + "/data", keysDirectory: directory + "/keys"), directory
        )
    }

    /// Two daemons on one store (as on a shared PostgreSQL database), each with its own wallet turns, crediting
    /// one wallet at once: a credit that lost the race to the other daemon's must not hand its stale version on
    /// (the next credit's condition would then match the other daemon's write, and drop it).
    @Test func twoDaemonsCreditingOneWalletLoseNoCredit() async throws {
        let store = SlowCommitStore()
        let keys = DerivedFingerprintKeys(secret: .random())
        let shop = try await Shop.open(store: store, fingerprintKeys: keys)
        let other = Shop.services(store: store, fingerprintKeys: keys)
        var total: Int64 = 0
        for round in 0..<5 {  // the race is not certain in one burst; five make a lost credit all but sure to show
            total += try await withThrowingTaskGroup(of: Int64.self) { group in
                for index in 0..<96 {
                    group.addTask {
                        let payIn = try await shop.pay(
                            1000 + Int64(index), through: index % 2 == 0 ? shop.services : other)
                        guard let payIn, payIn.status == "SUCCEEDED" else { return 0 }
                        return payIn.creditedFunds.amount
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(try await shop.balance == total, "round \(round)")
        }
        #expect(total > 0)
    }

    /// Refunds debit the wallet while pay-ins credit it, on the file store (where credits are handed on before
    /// their group commit is durable): the balance is the credits less the refunds that succeeded.
    @Test func refundsAndCreditsOfOneWalletAtOnceKeepTheBalanceExact() async throws {
        let (store, directory) = try Self.fileStore()
        defer {
            store.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let shop = try await Shop.open(store: store, fingerprintKeys: store.fingerprintKeys)
        var first: [PayIn] = []
        for index in 0..<24 {
            first.append(try #require(try await shop.pay(2000 + Int64(index), through: shop.services)))
        }
        let paid = first.reduce(Int64(0)) { $0 + $1.creditedFunds.amount }
        let refundable = first
        #expect(try await shop.balance == paid)
        struct Move: Sendable {
            var amount: Int64
            var refunded: Bool
        }
        let moves = try await withThrowingTaskGroup(of: Move.self) { group in
            for index in 0..<72 {
                group.addTask {
                    if index % 3 == 0 {
                        let refund = try await shop.services.payIns.refund(
                            clientId: "shop", payInId: refundable[index / 3].id,
                            request: RefundRequest(debitedFunds: Funds(currency: "EUR", amount: 700)))
                        let succeeded = refund.status == "SUCCEEDED"
                        return Move(amount: succeeded ? -refund.debitedFunds.amount : 0, refunded: succeeded)
                    }
                    guard let payIn = try await shop.pay(1000 + Int64(index), through: shop.services),
                        payIn.status == "SUCCEEDED"
                    else { return Move(amount: 0, refunded: false) }
                    return Move(amount: payIn.creditedFunds.amount, refunded: false)
                }
            }
            var all: [Move] = []
            for try await move in group { all.append(move) }
            return all
        }
        // The wallet always held enough: every refund took its 700.
        #expect(moves.filter(\.refunded).count == 24)
        #expect(try await shop.balance == paid + moves.reduce(Int64(0)) { $0 + $1.amount })
    }

    /// Wallet updates (description, tag) while pay-ins credit the wallet, on the file store: no credit is lost
    /// and the last update's description stays.
    @Test func updatesAndCreditsOfOneWalletAtOnceLoseNothing() async throws {
        let (store, directory) = try Self.fileStore()
        defer {
            store.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let shop = try await Shop.open(store: store, fingerprintKeys: store.fingerprintKeys)
        // A first pay-in marks the card valid (concurrent first pay-ins of a card would conflict on that mark).
        let first = try #require(try await shop.pay(5000, through: shop.services)).creditedFunds.amount
        let credits = try await withThrowingTaskGroup(of: Int64.self) { group in
            for index in 0..<64 {
                group.addTask {
                    if index % 4 == 0 {
                        _ = try await shop.services.wallets.update(
                            clientId: "shop", id: shop.wallet, description: "seller \(index)", tag: nil)
                        return 0
                    }
                    guard let payIn = try await shop.pay(1000 + Int64(index), through: shop.services),
                        payIn.status == "SUCCEEDED"
                    else { return 0 }
                    return payIn.creditedFunds.amount
                }
            }
            return try await group.reduce(0, +)
        }
        let wallet = try await shop.services.wallets.get(clientId: "shop", id: shop.wallet)
        #expect(wallet.balance == first + credits)
        #expect(wallet.description.hasPrefix("seller "))
    }
}

/// An in-memory store whose commits take a millisecond, as a database's round trip does: the two daemons' credits
/// of one wallet then overlap.
final class SlowCommitStore: RecordStore {
    let inner = InMemoryRecordStore()

    func get(_ collection: String, id: String) async throws -> Record? { try await inner.get(collection, id: id) }

    func commit(_ writes: [RecordWrite]) async throws -> [UInt64] {
        try await Task.sleep(nanoseconds: 1_000_000)
        return try await inner.commit(writes)
    }

    func scan(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> [Record] {
        try await inner.scan(collection, prefix: prefix, after: after, limit: limit)
    }
}
