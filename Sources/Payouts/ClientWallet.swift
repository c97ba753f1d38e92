import CardKit
public import Payments
import VaultCore
public import VaultStore

/// One of the client's own wallets (docs.mangopay.com, "Client Wallet"): `FEES` collects the fees of its users'
/// pay-outs, `CREDIT` (repudiation) holds dispute funds. One per funds type and currency, id `FEES_EUR`.
public struct ClientWallet: Sendable, Equatable, Codable {
    public var clientId: String
    public var fundsType: String
    public var currency: String
    public var balance: Int64
    public var creationDate: Int64

    public var id: String { fundsType + "_" + currency }

    public static let fundsTypes = ["FEES", "CREDIT"]

    /// The funds type and currency a client wallet id names (`FEES_EUR`), when it names one.
    public static func parse(_ id: String) -> (fundsType: String, currency: String)? {
        let parts = id.split(separator: "_", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, fundsTypes.contains(parts[0]), Currency(code: parts[1]) != nil else { return nil }
        return (parts[0], parts[1])
    }
}

/// The client's wallets: listed for EUR and every currency one of them has moved in, read, and debited or
/// credited with a write conditioned on the version read (a wallet never written reads as a zero balance).
public struct ClientWallets: Sendable {
    let environment: PaymentsEnvironment

    public init(environment: PaymentsEnvironment) {
        self.environment = environment
    }

    /// The client's wallets of `fundsType` (both when nil): EUR first, then the other currencies stored.
    public func list(clientId: String, fundsType: String? = nil) async throws -> [ClientWallet] {
        let created = try await creationDate(clientId: clientId)
        var currencies = ["EUR"]
        var stored: [String: ClientWallet] = [:]
        for record in try await environment.store.scanAll(Collections.clientWallets, prefix: clientId + ":") {
            let wallet = try RecordCoding.decode(ClientWallet.self, from: record)
            stored[wallet.id] = wallet
            if !currencies.contains(wallet.currency) { currencies.append(wallet.currency) }
        }
        var wallets: [ClientWallet] = []
        for currency in currencies {
            for type in ClientWallet.fundsTypes where fundsType == nil || fundsType == type {
                wallets.append(
                    stored[type + "_" + currency]
                        ?? ClientWallet(
                            clientId: clientId, fundsType: type, currency: currency, balance: 0, creationDate: created))
            }
        }
        return wallets
    }

    /// The client wallet `id` (`FEES_EUR`); one never written has a zero balance.
    /// - Throws: ``PaymentsError`` `.notFound` when `id` names no client wallet.
    public func get(clientId: String, id: String) async throws -> ClientWallet {
        try await read(clientId: clientId, id: id).value
    }

    /// The client wallet `id` (`FEES_EUR`) with its version, 0 when it was never written.
    /// - Throws: ``PaymentsError`` `.notFound` when `id` names no client wallet.
    public func read(clientId: String, id: String) async throws -> Stored<ClientWallet> {
        guard let parsed = ClientWallet.parse(id) else { throw PaymentsError.notFound("Wallet", id: id) }
        if let found = try await environment.store.read(
            ClientWallet.self, Collections.clientWallets, id: Identifier.scoped(clientId, id))
        {
            return found
        }
        let wallet = ClientWallet(
            clientId: clientId, fundsType: parsed.fundsType, currency: parsed.currency, balance: 0,
            creationDate: try await creationDate(clientId: clientId))
        return Stored(value: wallet, version: 0)
    }

    /// The write that changes the balance of `stored` by `change`, conditioned on the version read; nil when the
    /// result would be negative or out of range.
    static func write(
        _ stored: Stored<ClientWallet>, change: Int64
    ) throws -> (write: RecordWrite, wallet: ClientWallet)? {
        var wallet = stored.value
        let sum = wallet.balance.addingReportingOverflow(change)
        guard !sum.overflow, sum.partialValue >= 0 else { return nil }
        wallet.balance = sum.partialValue
        let write = RecordWrite.put(
            collection: Collections.clientWallets, id: Identifier.scoped(wallet.clientId, wallet.id),
            value: try RecordCoding.encode(wallet), condition: stored.version == 0 ? .absent : .version(stored.version))
        return (write, wallet)
    }

    func creationDate(clientId: String) async throws -> Int64 {
        try await ClientRegistry(environment: environment).client(clientId)?.creationDate ?? 0
    }
}
