import CardKit
import Foundation
public import Payments
import VaultCore
import VaultStore

/// An IBAN bank account of a user, or of the client itself (``userId`` nil), that pay-outs are wired to.
public struct BankAccount: Sendable, Equatable, Codable {
    public var id: String
    public var clientId: String
    /// The owning user; nil for the client's own account.
    public var userId: String?
    public var ownerName: String
    public var ownerAddress: Address
    /// Normalized (no spaces, upper case) and checked. Personal data: logs show ``IBAN/masked(_:)`` at most.
    public var iban: String
    public var bic: String?
    public var tag: String?
    public var active: Bool
    public var creationDate: Int64
    /// `IBAN`, the one type CardVault registers.
    public var type: String { "IBAN" }
}

/// What a merchant sends to register an IBAN account.
public struct BankAccountRequest: Sendable, Equatable {
    public var ownerName: String?
    public var ownerAddress: Address?
    public var iban: String?
    public var bic: String?
    public var tag: String?

    public init(
        ownerName: String? = nil, ownerAddress: Address? = nil, iban: String? = nil, bic: String? = nil,
        tag: String? = nil
    ) {
        self.ownerName = ownerName
        self.ownerAddress = ownerAddress
        self.iban = iban
        self.bic = bic
        self.tag = tag
    }

    /// The problems of this request by wire field, empty when it is valid; `iban` is the normalized IBAN.
    func problems() -> (fields: [String: String], iban: String?) {
        var fields: [String: String] = [:]
        if (ownerName ?? "").isEmpty { fields["OwnerName"] = "The OwnerName field is required." }
        if let ownerName, ownerName.utf8.count > 255 { fields["OwnerName"] = "The OwnerName is too long." }
        if let address = ownerAddress {
            if (address.addressLine1 ?? "").isEmpty {
                fields["OwnerAddress.AddressLine1"] = "The OwnerAddress.AddressLine1 field is required."
            }
            if (address.city ?? "").isEmpty { fields["OwnerAddress.City"] = "The OwnerAddress.City field is required." }
            if !CountryCode.isValid(address.country ?? "") {
                fields["OwnerAddress.Country"] = "The OwnerAddress.Country must be an ISO 3166-1 alpha-2 code."
            }
        } else {
            fields["OwnerAddress"] = "The OwnerAddress field is required."
        }
        var normalized: String?
        if let iban {
            do { normalized = try IBAN.normalized(iban) } catch { fields["IBAN"] = error.message }
        } else {
            fields["IBAN"] = "The IBAN field is required."
        }
        if let bic, !BIC.isValid(bic, isCountry: CountryCode.isValid) {
            fields["BIC"] = "The BIC must be 8 or 11 characters: bank, country, location and branch (ISO 9362)."
        }
        if let tag, tag.utf8.count > 255 { fields["Tag"] = "The Tag is too long." }
        return (fields, normalized)
    }
}

/// Registers, reads and lists the bank accounts of a client's users and of the client.
public struct BankAccountService: Sendable {
    let environment: PaymentsEnvironment

    public init(environment: PaymentsEnvironment) {
        self.environment = environment
    }

    var now: Int64 { Int64(environment.clock.now.timeIntervalSince1970.rounded(.down)) }

    /// Registers an IBAN account for user `userId`, or for the client when `userId` is nil.
    /// - Throws: ``PaymentsError`` `.invalidParameters` naming every wrong field, `.notFound` for an unknown user.
    public func create(clientId: String, userId: String?, request: BankAccountRequest) async throws -> BankAccount {
        let (problems, iban) = request.problems()
        guard problems.isEmpty, let iban else { throw PaymentsError.invalid(problems) }
        if let userId, !(try await UserService(environment: environment).exists(clientId: clientId, id: userId)) {
            throw PaymentsError.notFound("User", id: userId)
        }
        let account = BankAccount(
            id: Identifier.make("bankacc_", random: environment.random), clientId: clientId, userId: userId,
            ownerName: request.ownerName!, ownerAddress: request.ownerAddress!, iban: iban, bic: request.bic,
            tag: request.tag, active: true, creationDate: now)
        var writes: [RecordWrite] = [
            .put(
                collection: Collections.bankAccounts, id: Identifier.scoped(clientId, account.id),
                value: try RecordCoding.encode(account), condition: .absent)
        ]
        if let userId {
            writes.append(
                .put(
                    collection: Collections.bankAccountsByUser, id: Identifier.indexed(clientId, userId, account.id),
                    value: [], condition: .absent))
        }
        try await environment.store.commit(writes)
        environment.logger.info(
            "bank account registered",
            ["clientId": .string(clientId), "bankAccountId": .string(account.id), "iban": .string(IBAN.masked(iban))])
        return account
    }

    /// The bank account `id` of `clientId`; with `userId`, only when it is that user's.
    /// - Throws: ``PaymentsError`` `.notFound`.
    public func get(clientId: String, id: String, userId: String? = nil) async throws -> BankAccount {
        guard Identifier.isWellFormed(id),
            let found = try await environment.store.read(
                BankAccount.self, Collections.bankAccounts, id: Identifier.scoped(clientId, id)),
            userId == nil || found.value.userId == userId
        else { throw PaymentsError.notFound("BankAccount", id: id) }
        return found.value
    }

    /// The bank accounts of user `userId`, a page at a time.
    public func list(clientId: String, userId: String, page: PageRequest) async throws -> Page<BankAccount> {
        guard try await UserService(environment: environment).exists(clientId: clientId, id: userId) else {
            throw PaymentsError.notFound("User", id: userId)
        }
        let prefix = Identifier.indexed(clientId, userId, "")
        var accounts: [BankAccount] = []
        for entry in try await environment.store.scanAll(Collections.bankAccountsByUser, prefix: prefix) {
            accounts.append(try await get(clientId: clientId, id: String(entry.id.dropFirst(prefix.count))))
        }
        return page.slice(accounts, creationDate: \.creationDate, id: \.id)
    }
}
