import Foundation
import HTTPServer
import OwnerAccounts
import Payments
import VaultCore

/// SCA in the Mangopay wire: users answered with their SCA status, and the wallet-access gate of
/// `ScaContext=USER_PRESENT` (401 with `WWW-Authenticate: PendingUserAction RedirectUrl=…`).
struct ScaWire: Sendable {
    let services: MerchantServices

    var sca: ScaService { ScaService(environment: services.environment) }
    private var now: Int64 { Int64(services.environment.clock.now.timeIntervalSince1970.rounded(.down)) }

    /// `user` as JSON: an SCA-created OWNER is `PENDING_USER_ACTION` with its session's `RedirectUrl` until it
    /// enrolls. With `opening`, a new session is opened first (creation and categorization as OWNER).
    func user(_ user: User, opening: Bool = false) async throws -> Response {
        MangopayResponse.json(try await userJSON(user, opening: opening))
    }

    func userJSON(_ user: User, opening: Bool = false) async throws -> MangopayJSON {
        guard user.sca, ScaService.applies(to: user) else { return MangopayWire.user(user) }
        if opening { _ = try await sca.openSession(for: user) }
        let enrollment = try await sca.enrollment(clientId: user.clientId, userId: user.id)
        guard !enrollment.enrolled else { return MangopayWire.user(user) }
        return MangopayWire.user(user, status: "PENDING_USER_ACTION", redirectURL: sca.sessionURL(enrollment))
    }

    /// `POST /sca/users/{Id}/enrollment` and `/consent`: a new hosted session → `{"PendingUserAction": {…}}`.
    func openSession(_ request: Request, clientId: String) async throws -> Response {
        let user = try await services.users.get(clientId: clientId, id: request.parameters["id"] ?? "")
        let url = try await sca.openSession(for: user)
        return MangopayResponse.json(.object([("PendingUserAction", MangopayWire.pendingUserAction(url))]))
    }

    /// The gate of a wallet read or transaction list of `ownerId`'s account: nil when it may proceed (no
    /// `ScaContext`, `USER_NOT_PRESENT`, not an OWNER, or SCA passed within the window), else the 401.
    func walletAccess(
        _ request: Request, clientId: String, ownerId: @autoclosure () async throws -> String
    ) async throws -> Response? {
        let query: FormFields
        do {
            query = try request.query()
        } catch {
            throw PaymentsError.invalid("Query", "The query string is malformed.")
        }
        switch query["ScaContext"] ?? query["scaContext"] ?? query["sca_context"] {
        case nil, "USER_NOT_PRESENT": return nil
        case "USER_PRESENT": break
        default: throw PaymentsError.invalid("ScaContext", "The ScaContext must be USER_PRESENT or USER_NOT_PRESENT.")
        }
        let user = try await services.users.get(clientId: clientId, id: try await ownerId())
        guard try await !sca.grantsWalletAccess(user) else { return nil }
        let enrollment = try await sca.enrollment(clientId: clientId, userId: user.id)
        let url: String
        if let open = sca.sessionURL(enrollment) { url = open } else { url = try await sca.openSession(for: user) }
        var response = MangopayErrorResponse.body(
            status: .unauthorized, type: "sca_required",
            message: "The user must authenticate (SCA) to access this account: redirect them to the RedirectUrl",
            errors: nil, request: request, now: now)
        response.headers.set("WWW-Authenticate", "PendingUserAction RedirectUrl=\(url)")
        return response
    }
}
