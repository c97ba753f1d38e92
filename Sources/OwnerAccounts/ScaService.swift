import Foundation
public import Payments
import VaultCore
import VaultCrypto
public import VaultStore

/// SCA of `OWNER` users (docs.mangopay.com, "SCA"): hosted sessions, their completion on the sandbox SCA page,
/// and the wallet-access check of `ScaContext=USER_PRESENT`.
public struct ScaService: Sendable {
    let environment: PaymentsEnvironment
    static let collection = Collections.scaEnrollments

    public init(environment: PaymentsEnvironment) {
        self.environment = environment
    }

    /// The record lifetime for the record sweeper: kept with the user.
    public static let recordLifetimes = [
        RecordLifetime(kept: Collections.scaEnrollments, "with its user, until the merchant's data is removed")
    ]

    var now: Int64 { Int64(environment.clock.now.timeIntervalSince1970.rounded(.down)) }

    /// Whether `user` is subject to SCA: an `OWNER` that is not closed.
    public static func applies(to user: User) -> Bool { user.userCategory == "OWNER" && user.closedAt == nil }

    /// The enrollment of `userId`, or a fresh one when none was stored.
    public func enrollment(clientId: String, userId: String) async throws -> ScaEnrollment {
        try await read(clientId: clientId, userId: userId)?.value ?? ScaEnrollment(clientId: clientId, userId: userId)
    }

    /// Opens a hosted session for `user` (an `OWNER`) and answers its page URL.
    /// - Throws: ``PaymentsError`` `.invalidState` when the user is not an `OWNER`.
    public func openSession(for user: User) async throws -> String {
        guard Self.applies(to: user) else {
            throw PaymentsError(.invalidState, "SCA enrollment is for users whose UserCategory is OWNER")
        }
        let secret = Identifier.secret(count: 32, random: environment.random)
        try await change(clientId: user.clientId, userId: user.id) { $0.opening(secret: secret, at: now) }
        return pageURL(clientId: user.clientId, userId: user.id, secret: secret)
    }

    /// The URL of the open session of `enrollment`, if one is open.
    public func sessionURL(_ enrollment: ScaEnrollment) -> String? {
        enrollment.openSession(at: now).map {
            pageURL(clientId: enrollment.clientId, userId: enrollment.userId, secret: $0)
        }
    }

    /// Whether the page link's secret opens a session of `userId` now (the page shows its button).
    public func sessionIsOpen(clientId: String, userId: String, secret: String) async throws -> Bool {
        guard let found = try await read(clientId: clientId, userId: userId),
            let open = found.value.openSession(at: now)
        else { return false }
        return ConstantTime.equals(Array(open.utf8), Array(secret.utf8))
    }

    /// The user completed the session whose link carries `secret`: passed SCA now; the link is spent.
    /// - Throws: ``PaymentsError`` `.notFound` for an unknown, spent or expired session (the same answer).
    public func complete(clientId: String, userId: String, secret: String) async throws {
        let at = now
        try await change(clientId: clientId, userId: userId, mustExist: true) { enrollment in
            guard
                let passed = enrollment.passing(
                    secret: secret, at: at, matches: { ConstantTime.equals(Array($0.utf8), Array($1.utf8)) })
            else { throw PaymentsError.notFound("ScaSession", id: userId) }
            return passed
        }
        environment.logger.info("sca passed", ["clientId": .string(clientId), "userId": .string(userId)])
    }

    /// Whether `user` may read its wallets with `ScaContext=USER_PRESENT` now: not subject to SCA, or passed SCA
    /// within the window.
    public func grantsWalletAccess(_ user: User) async throws -> Bool {
        guard Self.applies(to: user) else { return true }
        return try await enrollment(clientId: user.clientId, userId: user.id).grantsAccess(at: now)
    }

    func pageURL(clientId: String, userId: String, secret: String) -> String {
        environment.configuration.publicBaseURL + "/sca/\(clientId)/\(userId)?s=\(secret)"
    }

    private func read(clientId: String, userId: String) async throws -> Stored<ScaEnrollment>? {
        guard Identifier.isWellFormed(clientId), Identifier.isWellFormed(userId) else { return nil }
        return try await environment.store.read(
            ScaEnrollment.self, Self.collection, id: Identifier.scoped(clientId, userId))
    }

    private func change(
        clientId: String, userId: String, mustExist: Bool = false,
        _ body: @Sendable (ScaEnrollment) throws -> ScaEnrollment
    ) async throws {
        try await retryingOnConflict(
            attempts: 5,
            exhausted: PaymentsError(.concurrentChange, "The SCA enrollment kept changing; nothing was written")
        ) {
            let found = try await read(clientId: clientId, userId: userId)
            if mustExist, found == nil { throw PaymentsError.notFound("ScaSession", id: userId) }
            let next = try body(found?.value ?? ScaEnrollment(clientId: clientId, userId: userId))
            try await environment.store.put(
                Self.collection, id: Identifier.scoped(clientId, userId), value: try RecordCoding.encode(next),
                condition: found.map { .version($0.version) } ?? .absent)
        }
    }
}
