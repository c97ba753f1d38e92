import Foundation
public import Payments
import VaultCore
public import VaultStore

/// A KYC document of a user, as created (docs.mangopay.com, "KYC Documents"). CardVault verifies no identity:
/// a document is stored `CREATED` and stays so; it holds no pages and is never asked for or reviewed.
public struct KycDocument: Sendable, Equatable, Codable {
    public var id: String
    public var clientId: String
    public var userId: String
    /// `IDENTITY_PROOF`, `REGISTRATION_PROOF`, `ARTICLES_OF_ASSOCIATION`, `SHAREHOLDER_DECLARATION`, `ADDRESS_PROOF`.
    public var type: String
    public var tag: String?
    public var creationDate: Int64
    /// `CREATED`, the only status a CardVault document has.
    public var status: String { "CREATED" }

    public static let types = [
        "IDENTITY_PROOF", "REGISTRATION_PROOF", "ARTICLES_OF_ASSOCIATION", "SHAREHOLDER_DECLARATION", "ADDRESS_PROOF",
    ]
}

/// Creates, reads and lists KYC documents, keyed per client like every record.
public struct KycDocumentService: Sendable {
    let environment: PaymentsEnvironment

    public init(environment: PaymentsEnvironment) {
        self.environment = environment
    }

    /// The record lifetimes for the record sweeper: kept with the user.
    public static let recordLifetimes = [
        RecordLifetime(kept: Collections.kycDocuments, "with its user, until the merchant's data is removed"),
        RecordLifetime(kept: Collections.kycDocumentsByUser, "with its document"),
    ]

    /// Creates a document of `type` for user `userId` (event `KYC_CREATED`).
    /// - Throws: ``PaymentsError`` `.invalidParameters` for a missing or unknown type, `.notFound` for the user.
    public func create(clientId: String, userId: String, type: String?, tag: String?) async throws -> KycDocument {
        var fields: [String: String] = [:]
        if let type {
            if !KycDocument.types.contains(type) {
                fields["Type"] = "The Type must be one of " + KycDocument.types.joined(separator: ", ") + "."
            }
        } else {
            fields["Type"] = "The Type field is required."
        }
        if let tag, tag.utf8.count > 255 { fields["Tag"] = "The Tag is too long." }
        guard fields.isEmpty else { throw PaymentsError.invalid(fields) }
        guard try await UserService(environment: environment).exists(clientId: clientId, id: userId) else {
            throw PaymentsError.notFound("User", id: userId)
        }
        let document = KycDocument(
            id: Identifier.make("kyc_", random: environment.random), clientId: clientId, userId: userId, type: type!,
            tag: tag, creationDate: Int64(environment.clock.now.timeIntervalSince1970.rounded(.down)))
        try await environment.store.commit(
            [
                .put(
                    collection: Collections.kycDocuments, id: Identifier.scoped(clientId, document.id),
                    value: try RecordCoding.encode(document), condition: .absent),
                .put(
                    collection: Collections.kycDocumentsByUser, id: Identifier.indexed(clientId, userId, document.id),
                    value: [], condition: .absent),
            ]
                + (try await EventLog.writes(
                    .kycCreated, resourceId: document.id, clientId: clientId, environment: environment)))
        return document
    }

    /// The document `id` of `clientId`; with `userId`, only when it is that user's.
    /// - Throws: ``PaymentsError`` `.notFound`.
    public func get(clientId: String, id: String, userId: String? = nil) async throws -> KycDocument {
        guard Identifier.isWellFormed(id),
            let found = try await environment.store.read(
                KycDocument.self, Collections.kycDocuments, id: Identifier.scoped(clientId, id)),
            userId == nil || found.value.userId == userId
        else { throw PaymentsError.notFound("KycDocument", id: id) }
        return found.value
    }

    /// The documents of user `userId`, or of every user of the client when nil, a page at a time.
    public func list(clientId: String, userId: String?, page: PageRequest) async throws -> Page<KycDocument> {
        var documents: [KycDocument] = []
        if let userId {
            guard try await UserService(environment: environment).exists(clientId: clientId, id: userId) else {
                throw PaymentsError.notFound("User", id: userId)
            }
            let prefix = Identifier.indexed(clientId, userId, "")
            for entry in try await environment.store.scanAll(Collections.kycDocumentsByUser, prefix: prefix) {
                documents.append(try await get(clientId: clientId, id: String(entry.id.dropFirst(prefix.count))))
            }
        } else {
            for record in try await environment.store.scanAll(Collections.kycDocuments, prefix: clientId + ":") {
                documents.append(try RecordCoding.decode(KycDocument.self, from: record))
            }
        }
        return page.slice(documents, creationDate: \.creationDate, id: \.id)
    }
}
