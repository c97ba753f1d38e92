import Foundation

/// The merchant side of the HTTP suite's set-up: a bearer token for the development client, then
/// users, wallets and cards through the Mangopay routes, as a merchant backend would make them.
final class MerchantSession {
    /// A card registration as the tokenization step needs it.
    struct Registration {
        var id: String
        /// The path of its `CardRegistrationURL` (the tokenization endpoint).
        var tokenizationPath: String
        var accessKey: String
        var preregistrationData: String
    }

    /// The published Mangopay sandbox card that authorizes frictionless (3-D Secure without challenge).
    static let frictionlessCard = "4970107111111119"

    let clientId: String
    let token: String
    private let client: LoopbackHTTPClient

    /// Logs in with the client's credentials (OAuth client credentials, Basic `ClientId:ApiKey`).
    init(server: CardVaultServer) throws {
        client = LoopbackHTTPClient(port: server.port)
        clientId = server.credentials.clientId
        let basic = Data((server.credentials.clientId + ":" + server.credentials.apiKey).utf8).base64EncodedString()
        let answer = try client.send(
            "POST", "/v2.01/oauth/token", headers: ["Authorization": "Basic " + basic],
            body: "grant_type=client_credentials", contentType: "application/x-www-form-urlencoded")
        guard answer.status == 200 else { throw BenchFailure("oauth/token answered \(answer.status)") }
        token = try answer.field("access_token")
    }

    /// The API path of `resource` for this client.
    func api(_ resource: String) -> String { "/v2.01/\(clientId)/\(resource)" }

    private func call(
        _ method: String, _ path: String, _ body: String = "", expect: Int = 200
    ) throws
        -> LoopbackHTTPClient.Response
    {
        let answer = try client.send(method, path, headers: ["Authorization": "Bearer " + token], body: body)
        guard answer.status == expect else {
            throw BenchFailure("\(method) \(path) answered \(answer.status): \(answer.body.prefix(300))")
        }
        return answer
    }

    /// Creates a natural user (a payer) and returns its id.
    func createUser() throws -> String {
        try call(
            "POST", api("users/natural"),
            #"{"FirstName":"Bench","LastName":"Shopper","Email":"bench@example.com","Birthday":188352000,"#
                + #""Nationality":"FR","CountryOfResidence":"FR","TermsAndConditionsAccepted":true,"#
                + #""UserCategory":"PAYER"}"#
        ).field("Id")
    }

    /// Creates a EUR wallet owned by `user` and returns its id.
    func createWallet(owner user: String) throws -> String {
        try call("POST", api("wallets"), #"{"Currency":"EUR","Description":"bench","Owners":[""# + user + #""]}"#)
            .field("Id")
    }

    /// The balance of wallet `id`, in minor units.
    func walletBalance(_ id: String) throws -> Int64 {
        let balance = try call("GET", api("wallets/" + id)).json["Balance"] as? [String: Any]
        guard let amount = (balance?["Amount"] as? NSNumber)?.int64Value else {
            throw BenchFailure("GET wallets/\(id) has no Balance.Amount")
        }
        return amount
    }

    /// Creates a card registration for `user`.
    func createRegistration(user: String) throws -> Registration {
        let answer = try call(
            "POST", api("cardregistrations"),
            #"{"UserId":""# + user + #"","Currency":"EUR","CardType":"CB_VISA_MASTERCARD"}"#)
        let url = try answer.field("CardRegistrationURL")
        guard let components = URLComponents(string: url), !components.path.isEmpty else {
            throw BenchFailure("CardRegistrationURL \(url) has no path")
        }
        return Registration(
            id: try answer.field("Id"), tokenizationPath: components.path, accessKey: try answer.field("AccessKey"),
            preregistrationData: try answer.field("PreregistrationData"))
    }

    /// The tokenization POST's form for `registration` with the sandbox card.
    static func tokenizationForm(_ registration: Registration) -> String {
        "data=" + registration.preregistrationData + "&accessKeyRef=" + registration.accessKey + "&cardNumber="
            + frictionlessCard + "&cardExpirationDate=1229&cardCvx=123"
    }

    /// Registers the sandbox card for `user` (create registration, tokenization POST, update) and returns the card id.
    func createCard(user: String) throws -> String {
        let registration = try createRegistration(user: user)
        let tokenized = try client.send(
            "POST", registration.tokenizationPath, body: Self.tokenizationForm(registration),
            contentType: "application/x-www-form-urlencoded")
        guard tokenized.status == 200, tokenized.body.hasPrefix("data=") else {
            throw BenchFailure("tokenization answered \(tokenized.status): \(tokenized.body.prefix(100))")
        }
        let updated = try call(
            "PUT", api("cardregistrations/" + registration.id), #"{"RegistrationData":""# + tokenized.body + #""}"#)
        return try updated.field("CardId")
    }
}
