/// The strong customer authentication (SCA) of one `OWNER` user: the hosted session in progress, if any, and
/// when the user last passed SCA.
///
/// Pure: every change is a function of the record, the time and a fresh secret; ``ScaService`` stores it.
public struct ScaEnrollment: Sendable, Equatable, Codable {
    public var clientId: String
    public var userId: String
    /// The single-use secret of the session page link; nil when no session is open.
    var sessionSecret: String?
    /// When the open session was issued (Unix seconds).
    var sessionIssuedAt: Int64?
    /// When the user last passed SCA (Unix seconds); nil until enrolled.
    public var passedAt: Int64?

    /// A hosted session lasts 10 minutes, as Mangopay's do.
    public static let sessionSeconds: Int64 = 600
    /// Wallet access needs SCA again once 180 days have passed since the last one.
    public static let accessWindowSeconds: Int64 = 180 * 86_400

    public init(clientId: String, userId: String) {
        self.clientId = clientId
        self.userId = userId
    }

    /// Whether the user has ever passed SCA: enrolled.
    public var enrolled: Bool { passedAt != nil }

    /// Whether the wallets may be read with `ScaContext=USER_PRESENT` at `now`: SCA passed within the window.
    public func grantsAccess(at now: Int64) -> Bool {
        guard let passedAt else { return false }
        return now >= passedAt && now - passedAt < Self.accessWindowSeconds
    }

    /// The secret of the session open at `now`, or nil when none is or it has expired.
    public func openSession(at now: Int64) -> String? {
        guard let sessionSecret, let sessionIssuedAt, now - sessionIssuedAt < Self.sessionSeconds else { return nil }
        return sessionSecret
    }

    /// Opens a new session with `secret` at `now`, replacing any session in progress.
    public func opening(secret: String, at now: Int64) -> ScaEnrollment {
        var next = self
        next.sessionSecret = secret
        next.sessionIssuedAt = now
        return next
    }

    /// The user passed SCA in the session whose secret is `secret`: the session is closed (its link works once).
    /// - Returns: nil when no session is open at `now` or the secret is not its own.
    public func passing(secret: String, at now: Int64, matches: (String, String) -> Bool) -> ScaEnrollment? {
        guard let open = openSession(at: now), matches(open, secret) else { return nil }
        var next = self
        next.sessionSecret = nil
        next.sessionIssuedAt = nil
        next.passedAt = now
        return next
    }
}
