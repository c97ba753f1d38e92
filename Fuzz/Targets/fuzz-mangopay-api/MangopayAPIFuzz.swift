import Foundation
import FuzzSupport
import HTTPServer
import Payments
import VaultCore
import VaultCrypto
import VaultStore

@testable import MangopayAPI

/// Whole requests through the Mangopay and pay-in routes, in process (router over an in-memory store): the
/// request line, the headers (authentication, idempotency keys), the query (paging) and the JSON body as the
/// binding layer reads it. An input is a small text request:
///
///     POST /v2.01/$CLIENT/users/natural
///     Authorization: Bearer $TOKEN
///
///     {"FirstName":"John", ...}
///
/// `$CLIENT`, `$TOKEN`, `$BASIC`, `$USER`, `$LEGAL`, `$WALLET`, `$REG`, `$REGDATA`, `$ACCESSKEY`, `$CARD`,
/// `$PAYIN` and `$REFUND` stand for objects the harness creates first. Properties: no answer is a 5xx, and a
/// JSON answer is valid JSON.
@main
enum MangopayAPIFuzz {
    nonisolated(unsafe) static var world: World?
    nonisolated(unsafe) static var runs = 0

    static func main() {
        FuzzDriver.run { bytes in
            // A fresh world now and then, so that what the inputs create does not pile up in memory.
            if world == nil || runs % 2000 == 0 { world = World.make() }
            runs += 1
            guard let world else { return }
            let input = substitute(bytes, world.substitutions)
            guard let request = parse(input) else { return }
            let response = runBlocking { await world.router.respond(to: request) }
            FuzzCheck.require(
                response.status.code < 500,
                "\(request.method.rawValue) \(request.path) answered \(response.status.code): \(response.bodyText.prefix(300))"
            )
            if (response.headers["Content-Type"] ?? "").contains("json"), !response.body.isEmpty {
                FuzzCheck.require(
                    (try? MangopayJSON.parse(response.body)) != nil,
                    "\(request.method.rawValue) \(request.path) answered invalid JSON")
            }
        }
    }

    /// The request line, header lines up to an empty line, then the body.
    static func parse(_ input: [UInt8]) -> Request? {
        var lines: [ArraySlice<UInt8>] = []
        var start = 0
        var bodyStart = input.count
        var index = 0
        while index < input.count {
            if input[index] == 0x0A {
                let line = input[start..<index]
                if line.isEmpty, !lines.isEmpty {
                    bodyStart = index + 1
                    break
                }
                lines.append(line)
                start = index + 1
            }
            index += 1
        }
        if bodyStart == input.count, start < input.count { lines.append(input[start...]) }
        guard let requestLine = lines.first else { return nil }
        let words = requestLine.split(separator: 0x20, maxSplits: 1)
        guard words.count == 2 else { return nil }
        var headers = HTTPHeaders()
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            let name = String(decoding: line[..<colon], as: UTF8.self)
            let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingCharacters(in: .whitespaces)
            headers.add(name, value)
        }
        return Request(
            method: HTTPMethod(String(decoding: words[0], as: UTF8.self)),
            target: String(decoding: words[1], as: UTF8.self), headers: headers,
            body: bodyStart < input.count ? Array(input[bodyStart...]) : [], remoteAddress: "192.0.2.10")
    }

    /// A client with a token, two users, a wallet, an open card registration, a registered card, a pay-in and
    /// a refund of it.
    struct World: Sendable {
        let router: Router
        let substitutions: [(String, [UInt8])]

        static func make() -> World? {
            runBlocking { await build() }
        }

        static func build() async -> World? {
            let environment = PaymentsEnvironment(
                store: InMemoryRecordStore(), clock: ManualClock(), random: RandomPool.shared,
                fingerprintKeys: DerivedFingerprintKeys(
                    secret: SymmetricKey(copying: [UInt8](repeating: 7, count: 32))),
                configuration: PaymentsConfiguration(
                    publicBaseURL: "http://127.0.0.1:9999", tokenizationsPerMinutePerAddress: 1_000_000))
            let services = MerchantServices(environment: environment)
            var router = Router(errorDialect: .mangopay)
            MangopayRoutes(services: services, checkoutOrigins: ["https://shop.example"]).register(on: &router)
            PayInRoutes(services: services).register(on: &router)
            guard let credentials = try? await services.clients.create(name: "shop") else { return nil }
            let client = credentials.clientId
            let basic = Data("\(client):\(credentials.apiKey)".utf8).base64EncodedString()
            func send(
                _ method: String, _ target: String, _ body: String, _ headers: [String: String] = [:]
            ) async
                -> MangopayJSON
            {
                var fields = HTTPHeaders()
                for (name, value) in headers { fields.set(name, value) }
                let response = await router.respond(
                    to: Request(method: HTTPMethod(method), target: target, headers: fields, body: Array(body.utf8)))
                return (try? MangopayJSON.parse(response.body)) ?? .null
            }
            func text(_ value: MangopayJSON?) -> String { if case .string(let text)? = value { text } else { "" } }
            let token = text(
                await send(
                    "POST", "/v2.01/oauth/token", "grant_type=client_credentials", ["Authorization": "Basic " + basic])[
                        "access_token"])
            let auth = ["Authorization": "Bearer " + token]
            let api = "/v2.01/" + client
            let user = text(
                await send(
                    "POST", api + "/users/natural",
                    #"{"FirstName":"John","LastName":"Doe","Email":"john@example.com","Birthday":188352000,"#
                        + #""Nationality":"FR","CountryOfResidence":"FR","TermsAndConditionsAccepted":true}"#, auth)[
                        "Id"])
            let legal = text(
                await send(
                    "POST", api + "/users/legal",
                    #"{"Name":"Shop","LegalPersonType":"BUSINESS","Email":"shop@example.com","#
                        + #""LegalRepresentativeFirstName":"Jane","LegalRepresentativeLastName":"Doe","#
                        + #""LegalRepresentativeBirthday":188352000,"LegalRepresentativeNationality":"FR","#
                        + #""LegalRepresentativeCountryOfResidence":"FR","CompanyNumber":"123456789"}"#, auth)["Id"])
            let wallet = text(
                await send(
                    "POST", api + "/wallets", #"{"Currency":"EUR","Description":"W","Owners":[""# + user + #""]}"#, auth
                )[
                    "Id"])
            let registration = await send(
                "POST", api + "/cardregistrations", #"{"Currency":"EUR","UserId":""# + user + #""}"#, auth)
            let url = text(registration["CardRegistrationURL"])
            let form =
                "data=\(text(registration["PreregistrationData"]))&accessKeyRef=\(text(registration["AccessKey"]))"
                + "&cardNumber=4970107111111119&cardExpirationDate=1229&cardCvx=123"
            let tokenized = await router.respond(
                to: Request(
                    method: .post, target: String(url.dropFirst("http://127.0.0.1:9999".count)),
                    body: Array(form.utf8), remoteAddress: "192.0.2.10"))
            let registrationId = text(registration["Id"])
            let updated = await send(
                "PUT", api + "/cardregistrations/" + registrationId,
                #"{"RegistrationData":""# + tokenized.bodyText + #""}"#, auth)
            let card = text(updated["CardId"])
            let open = await send(
                "POST", api + "/cardregistrations", #"{"Currency":"EUR","UserId":""# + user + #""}"#, auth)
            let payIn = text(
                await send(
                    "POST", api + "/payins/card/direct",
                    #"{"AuthorId":""# + user + #"","CreditedWalletId":""# + wallet + #"","CardId":""# + card
                        + #"","DebitedFunds":{"Currency":"EUR","Amount":1000},"Fees":{"Currency":"EUR","Amount":0},"#
                        + #""SecureModeReturnURL":"https://shop.example/return","SecureMode":"DEFAULT","#
                        + #""IpAddress":"192.0.2.10","BrowserInfo":{"AcceptHeader":"text/html","JavaEnabled":true,"#
                        + #""JavascriptEnabled":true,"Language":"FR-FR","ColorDepth":4,"ScreenHeight":1800,"#
                        + #""ScreenWidth":400,"TimeZoneOffset":"+60","UserAgent":"UA"}}"#, auth)["Id"])
            let refund = text(
                await send(
                    "POST", api + "/payins/" + payIn + "/refunds",
                    #"{"AuthorId":""# + user + #"","DebitedFunds":{"Currency":"EUR","Amount":100},"#
                        + #""Fees":{"Currency":"EUR","Amount":0}}"#, auth)["Id"])
            let values: [(String, String)] = [
                ("$CLIENT", client), ("$TOKEN", token), ("$BASIC", basic), ("$USER", user), ("$LEGAL", legal),
                ("$WALLET", wallet), ("$REGDATA", text(open["PreregistrationData"])),
                ("$ACCESSKEY", text(open["AccessKey"])), ("$REG", text(open["Id"])), ("$CARD", card),
                ("$PAYIN", payIn), ("$REFUND", refund),
            ]
            return World(router: router, substitutions: values.map { ($0.0, Array($0.1.utf8)) })
        }
    }
}
