import Foundation
import VaultCore
import VaultStore

/// One entry of a transaction list: a pay-in (any kind) or a refund.
public enum TransactionItem: Sendable, Equatable {
    case payIn(PayIn)
    case refund(Refund)

    public var id: String {
        switch self {
        case .payIn(let payIn): payIn.id
        case .refund(let refund): refund.id
        }
    }

    public var creationDate: Int64 {
        switch self {
        case .payIn(let payIn): payIn.creationDate
        case .refund(let refund): refund.creationDate
        }
    }

    /// `CREATED`, `SUCCEEDED` or `FAILED`.
    public var status: String {
        switch self {
        case .payIn(let payIn): payIn.status
        case .refund(let refund): refund.status
        }
    }

    /// The wire's `Type`: a refund of a pay-in is a `PAYOUT` of nature `REFUND`, as Mangopay shows it.
    public var type: String {
        switch self {
        case .payIn: "PAYIN"
        case .refund: "PAYOUT"
        }
    }

    /// The wire's `Nature`.
    public var nature: String {
        switch self {
        case .payIn: "REGULAR"
        case .refund: "REFUND"
        }
    }
}

/// The filters of Mangopay's transaction lists (`Status`, `Type`, `Nature`, `BeforeDate`, `AfterDate`); each
/// list filter may name several values separated by commas. Absent filters let everything through.
public struct TransactionFilter: Sendable, Equatable {
    public static let statuses = ["CREATED", "SUCCEEDED", "FAILED"]
    public static let types = ["PAYIN", "PAYOUT", "TRANSFER"]
    public static let natures = ["REGULAR", "REPUDIATION", "REFUND", "SETTLEMENT"]

    public var statuses: Set<String>?
    public var types: Set<String>?
    public var natures: Set<String>?
    /// Only transactions created strictly before this Unix second.
    public var beforeDate: Int64?
    /// Only transactions created strictly after this Unix second.
    public var afterDate: Int64?

    public init(
        statuses: Set<String>? = nil, types: Set<String>? = nil, natures: Set<String>? = nil, beforeDate: Int64? = nil,
        afterDate: Int64? = nil
    ) {
        self.statuses = statuses
        self.types = types
        self.natures = natures
        self.beforeDate = beforeDate
        self.afterDate = afterDate
    }

    /// Parses the query parameters (nil: absent).
    /// - Throws: ``PaymentsError`` `.invalidParameters` naming every unknown value or malformed date.
    public init(status: String?, type: String?, nature: String?, beforeDate: String?, afterDate: String?) throws {
        var rules = FieldRules()
        func values(_ text: String?, _ allowed: [String], _ field: String) -> Set<String>? {
            guard let text else { return nil }
            let parts = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            for part in parts where !allowed.contains(part) {
                rules.fail(field, "The \(field) must be one of \(allowed.joined(separator: ", ")).")
            }
            return Set(parts)
        }
        func date(_ text: String?, _ field: String) -> Int64? {
            guard let text else { return nil }
            guard text.utf8.count <= 11, let value = Int64(text), (0...99_999_999_999).contains(value) else {
                rules.fail(field, "The \(field) must be a Unix timestamp in seconds (0 to 99999999999).")
                return nil
            }
            return value
        }
        self.init(
            statuses: values(status, Self.statuses, "Status"), types: values(type, Self.types, "Type"),
            natures: values(nature, Self.natures, "Nature"), beforeDate: date(beforeDate, "BeforeDate"),
            afterDate: date(afterDate, "AfterDate"))
        try rules.check()
    }

    /// Whether `item` passes every filter.
    public func admits(_ item: TransactionItem) -> Bool {
        if let statuses, !statuses.contains(item.status) { return false }
        if let types, !types.contains(item.type) { return false }
        if let natures, !natures.contains(item.nature) { return false }
        if let beforeDate, item.creationDate >= beforeDate { return false }
        if let afterDate, item.creationDate <= afterDate { return false }
        return true
    }
}

/// The index entries that list a transaction under the users and wallets it concerns
/// (``Collections/transactionsByUser``, ``Collections/transactionsByWallet``). They are written in the batch that
/// creates the transaction (`.absent`: named after it); the value says which collection holds it (`p`, `r`).
public enum TransactionIndex {
    static let payInMark: [UInt8] = [UInt8(ascii: "p")]
    static let refundMark: [UInt8] = [UInt8(ascii: "r")]

    /// The entries of a new pay-in (not of a card validation): under its author, its credited user and its wallet.
    static func writes(for payIn: PayIn) -> [RecordWrite] {
        guard payIn.machine.purpose == .payIn else { return [] }
        var users = [payIn.authorId]
        if let credited = payIn.creditedUserId, credited != payIn.authorId { users.append(credited) }
        var writes = users.map {
            RecordWrite.put(
                collection: Collections.transactionsByUser, id: Identifier.indexed(payIn.clientId, $0, payIn.id),
                value: payInMark, condition: .absent)
        }
        if let wallet = payIn.creditedWalletId {
            writes.append(
                .put(
                    collection: Collections.transactionsByWallet,
                    id: Identifier.indexed(payIn.clientId, wallet, payIn.id), value: payInMark,
                    condition: .absent))
        }
        return writes
    }

    /// The entries of a new refund: under the shopper it credits, the owner of the wallet it debits, and that wallet.
    static func writes(for refund: Refund, ownerId: String) -> [RecordWrite] {
        var users = [ownerId]
        if let credited = refund.creditedUserId, credited != ownerId { users.append(credited) }
        var writes = users.map {
            RecordWrite.put(
                collection: Collections.transactionsByUser, id: Identifier.indexed(refund.clientId, $0, refund.id),
                value: refundMark, condition: .absent)
        }
        writes.append(
            .put(
                collection: Collections.transactionsByWallet,
                id: Identifier.indexed(refund.clientId, refund.debitedWalletId, refund.id), value: refundMark,
                condition: .absent))
        return writes
    }
}

extension PayInService {
    /// The transactions (pay-ins of every kind and refunds) of user `userId`, filtered, a page at a time.
    /// - Throws: ``PaymentsError`` `.notFound` for an unknown user.
    public func transactions(
        clientId: String, userId: String, filter: TransactionFilter, page: PageRequest
    ) async throws -> Page<TransactionItem> {
        guard try await users.exists(clientId: clientId, id: userId) else {
            throw PaymentsError.notFound("User", id: userId)
        }
        return try await indexed(Collections.transactionsByUser, clientId: clientId, key: userId, filter, page)
    }

    /// The transactions that credit or debit wallet `walletId`, filtered, a page at a time.
    /// - Throws: ``PaymentsError`` `.notFound` for an unknown wallet.
    public func transactions(
        clientId: String, walletId: String, filter: TransactionFilter, page: PageRequest
    ) async throws -> Page<TransactionItem> {
        guard try await wallets.read(clientId: clientId, id: walletId) != nil else {
            throw PaymentsError.notFound("Wallet", id: walletId)
        }
        return try await indexed(Collections.transactionsByWallet, clientId: clientId, key: walletId, filter, page)
    }

    private func indexed(
        _ collection: String, clientId: String, key: String, _ filter: TransactionFilter, _ page: PageRequest
    ) async throws -> Page<TransactionItem> {
        let prefix = Identifier.indexed(clientId, key, "")
        var items: [TransactionItem] = []
        for entry in try await environment.store.scanAll(collection, prefix: prefix) {
            let id = String(entry.id.dropFirst(prefix.count))
            let item: TransactionItem?
            if entry.value == TransactionIndex.refundMark {
                item = try await environment.store.read(
                    Refund.self, Self.refunds, id: Identifier.scoped(clientId, id)
                ).map { .refund($0.value) }
            } else {
                item = try await read(clientId: clientId, id: id, purpose: .payIn).map { .payIn($0.value) }
            }
            if let item, filter.admits(item) { items.append(item) }
        }
        return page.slice(items, creationDate: \.creationDate, id: \.id)
    }
}
