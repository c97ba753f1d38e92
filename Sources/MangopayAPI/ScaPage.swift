import Foundation
import HTTPServer
import OwnerAccounts
import Payments

/// The sandbox SCA page a `PendingUserAction.RedirectUrl` leads to: it names the user and completes the session
/// with one button (the sandbox asks for no factor). The link's secret works once and for 10 minutes; after
/// the button, the browser goes (303) to the `returnUrl` the platform added to the link, if it is http(s).
struct ScaPage: Sendable {
    let services: MerchantServices

    private var sca: ScaService { ScaService(environment: services.environment) }

    func show(_ request: Request) async -> Response {
        let query = (try? request.query()) ?? FormFields()
        let secret = query["s"] ?? ""
        let clientId = request.parameters["clientId"] ?? ""
        let userId = request.parameters["id"] ?? ""
        guard (try? await sca.sessionIsOpen(clientId: clientId, userId: userId, secret: secret)) == true else {
            return Self.notValid
        }
        var action = request.path
        if let returnURL = query["returnUrl"], let encoded = Self.encoded(returnURL) {
            action += "?returnUrl=" + encoded
        }
        let body = """
            <h1>Confirm it is you</h1>\
            <p>Strong customer authentication for the account <strong id="sca-user">\(HTMLText.escape(userId))\
            </strong>.</p>\
            <form method="post" action="\(HTMLText.escape(action))">\
            <input type="hidden" name="s" value="\(HTMLText.escape(secret))">\
            <div class="actions"><button class="primary" type="submit" id="sca-complete">Complete authentication\
            </button></div></form>\
            <p class="notice">CardVault sandbox: no factor is asked; this button passes SCA.</p>
            """
        return SandboxACSPage.page(status: .ok, Self.document(title: "Strong customer authentication", body: body))
    }

    func complete(_ request: Request) async -> Response {
        guard let form = try? request.formFields(), let secret = form["s"] else { return Self.notValid }
        do {
            try await sca.complete(
                clientId: request.parameters["clientId"] ?? "", userId: request.parameters["id"] ?? "",
                secret: secret)
        } catch let error as PaymentsError where error.code == .notFound {
            return Self.notValid
        } catch {
            return SandboxACSPage.page(
                status: .serviceUnavailable,
                Self.document(title: "Not recorded", body: "<h1>Not recorded</h1><p>Please try again.</p>"))
        }
        if let returnURL = (try? request.query())?["returnUrl"], Self.encoded(returnURL) != nil {
            var response = Response(status: HTTPStatus(303), body: [])
            response.headers.set("Location", returnURL)
            response.headers.set("Cache-Control", "no-store")
            response.headers.set("Referrer-Policy", "no-referrer")
            return response
        }
        return SandboxACSPage.page(
            status: .ok,
            Self.document(
                title: "Authentication complete",
                body: "<h1>Authentication complete</h1><p id=\"sca-outcome\">You can return to the platform.</p>"))
    }

    /// The 429 page (``RateLimitGate`` sets the status and `Retry-After`).
    static func tooManyRequests(retryAfter seconds: Int) -> Response {
        SandboxACSPage.page(
            status: .tooManyRequests,
            document(title: "Too many attempts", body: "<h1>Too many attempts</h1><p>Wait \(seconds) seconds.</p>"))
    }

    private static var notValid: Response {
        SandboxACSPage.page(
            status: .notFound,
            document(
                title: "Link not valid",
                body: "<h1>Link not valid</h1><p>This authentication link is not valid or was used already. "
                    + "Return to the platform and try again.</p>"))
    }

    /// `url` percent-encoded for a query, when it is an absolute http(s) URL.
    private static func encoded(_ url: String) -> String? {
        guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme?.lowercased() ?? ""),
            parsed.host != nil
        else { return nil }
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return url.addingPercentEncoding(withAllowedCharacters: allowed)
    }

    private static func document(title: String, body: String) -> String {
        """
        <!DOCTYPE html><html lang="en"><head><meta charset="utf-8">\
        <meta name="viewport" content="width=device-width, initial-scale=1">\
        <title>\(HTMLText.escape(title)) · CardVault sandbox SCA</title><style>\(SandboxACSPage.style)</style>\
        </head><body><main id="sca">\(body)</main></body></html>
        """
    }
}
