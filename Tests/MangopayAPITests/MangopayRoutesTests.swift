import CardVaultTesting
import Foundation
import HTTPServer
import Testing
import VaultCore
import VaultCrypto
import VaultStore

@testable import MangopayAPI
@testable import Payments

/// An in-process Mangopay API: the router over an in-memory store, with one client and its bearer token.
struct MangopayHarness {
    let clock: ManualClock
    let services: MerchantServices
    let router: Router
    var clientId = ""
    var apiKey = ""
    var token = ""

    static func make(
        origins: [String] = ["https://shop.example"], store: any RecordStore = InMemoryRecordStore()
    ) async throws -> MangopayHarness {
        let clock = ManualClock()
        let environment = PaymentsEnvironment.testing(store: store, clock: clock)
        let services = MerchantServices(environment: environment)
        var router = Router()
        MangopayRoutes(services: services, checkoutOrigins: origins, openAPIDocument: Array("openapi: 3.0.3\n".utf8))
            .register(on: &router)
        PayInRoutes(services: services).register(on: &router)
        PreauthorizationRoutes(services: services).register(on: &router)
        PayPalRoutes(services: services).register(on: &router)
        var harness = MangopayHarness(clock: clock, services: services, router: router)
        let credentials = try await services.clients.create(name: "shop")
        harness.clientId = credentials.clientId
        harness.apiKey = credentials.apiKey
        let response = await harness.send(
            "POST", "/v2.01/oauth/token", body: #"{"grant_type": "client_credentials"}"#,
            headers: [
                "Authorization": "Basic " + Data("shop:\(credentials.apiKey)".utf8).base64EncodedString(),
                "Content-Type": "application/x-www-form-urlencoded",
            ], authorized: false)
        harness.token = try #require(response.json["access_token"]?.stringValue)
        return harness
    }

    private init(clock: ManualClock, services: MerchantServices, router: Router) {
        self.clock = clock
        self.services = services
        self.router = router
    }

    func send(
        _ method: String, _ target: String, body: String = "", headers: [String: String] = [:], authorized: Bool = true,
        remote: String = "192.0.2.10"
    ) async -> Response {
        var fields = HTTPHeaders()
        if authorized { fields.set("Authorization", "Bearer " + token) }
        for (name, value) in headers { fields.set(name, value) }
        return await router.respond(
            to: Request(
                method: HTTPMethod(method), target: target, headers: fields, body: Array(body.utf8),
                remoteAddress: remote))
    }

    func api(_ path: String) -> String { "/v2.01/\(clientId)" + path }

    func createUser() async throws -> String {
        let response = await send(
            "POST", api("/users/natural"),
            body:
                #"{"PersonType":"NATURAL","KYCLevel":"LIGHT","FirstName":"John","LastName":"Doe","Email":"john@example.com","Birthday":188352000,"Nationality":"FR","CountryOfResidence":"FR","TermsAndConditionsAccepted":1,"UserCategory":"PAYER"}"#
        )
        return try #require(response.json["Id"]?.stringValue)
    }

    func createRegistration(cardType: String? = nil) async throws -> MangopayJSON {
        let user = try await createUser()
        let type = cardType.map { #","CardType":""# + $0 + #"""# } ?? ""
        let response = await send(
            "POST", api("/cardregistrations"), body: #"{"Currency":"EUR","UserId":""# + user + #"""# + type + "}")
        #expect(response.status == .ok)
        return response.json
    }

    /// Posts the tokenization form to the registration's URL (path part) without a content type, as the SDK's
    /// mocked tests do.
    func tokenize(
        _ registration: MangopayJSON, number: String = "4970107111111119", expiry: String = "1229",
        cvx: String = "123", headers: [String: String] = [:]
    ) async -> Response {
        let url = registration["CardRegistrationURL"]?.stringValue ?? ""
        let path = String(url.dropFirst("http://127.0.0.1:9999".count))
        let form =
            "data=\(registration["PreregistrationData"]?.stringValue ?? "")&accessKeyRef=\(registration["AccessKey"]?.stringValue ?? "")&cardNumber=\(number)&cardExpirationDate=\(expiry)&cardCvx=\(cvx)"
        return await send("POST", path, body: form, headers: headers, authorized: false)
    }
}

extension Response {
    var json: MangopayJSON { (try? MangopayJSON.parse(body)) ?? .null }
}

extension MangopayJSON {
    var stringValue: String? { if case .string(let text) = self { text } else { nil } }
    var intValue: Int64? { if case .int(let value) = self { value } else { nil } }
    var arrayValue: [MangopayJSON]? { if case .array(let items) = self { items } else { nil } }
    var keys: [String] { if case .object(let members) = self { members.map(\.0) } else { [] } }
}

@Suite struct MangopayRoutesTests {
    @Test func oauthAnswersExactlyWhatTheSDKExpects() async throws {
        let harness = try await MangopayHarness.make()
        let basic = "Basic " + Data("shop:\(harness.apiKey)".utf8).base64EncodedString()
        for body in ["", "grant_type=client_credentials", #"{"grant_type": "client_credentials"}"#] {
            let response = await harness.send(
                "POST", "/v2.01/oauth/token", body: body, headers: ["Authorization": basic], authorized: false)
            #expect(response.status.code == 200)
            #expect(response.json.keys == ["access_token", "token_type", "expires_in"])
            #expect(response.json["token_type"] == .string("Bearer"))
            #expect(response.json["expires_in"] == .int(3600))
        }
        let wrong = await harness.send(
            "POST", "/v2.01/oauth/token/",
            headers: ["Authorization": "Basic " + Data("shop:nope".utf8).base64EncodedString()],
            authorized: false)
        #expect(wrong.status.code == 401)
        #expect(wrong.json["error"] == .string("invalid_client"))
        let garbage = await harness.send(
            "POST", "/v2.01/oauth/token", headers: ["Authorization": "Basic %%%"], authorized: false)
        #expect(garbage.status.code == 401)
        let grant = await harness.send(
            "POST", "/v2.01/oauth/token", body: "grant_type=password", headers: ["Authorization": basic],
            authorized: false)
        #expect(grant.status.code == 400 && grant.json["error"] == .string("unsupported_grant_type"))
    }

    @Test func bearerTokenIsRequiredAndBoundToItsClient() async throws {
        let harness = try await MangopayHarness.make()
        let none = await harness.send("GET", harness.api("/users/user_x"), authorized: false)
        #expect(none.status.code == 401)
        #expect(none.json["Type"] == .string("invalid_credentials"))
        #expect(none.json.keys == ["Message", "Type", "Id", "Date", "errors"])
        let bad = await harness.send("GET", harness.api("/users/user_x"), headers: ["Authorization": "Bearer nonsense"])
        #expect(bad.status.code == 401)
        _ = try await harness.services.clients.create(name: "other")
        let foreign = await harness.send("GET", "/v2.01/other/users/user_x")
        #expect(foreign.status.code == 403)
        #expect(foreign.json["Type"] == .string("forbidden_ressource"))
        // Expiry: the same token is refused an hour later.
        #expect(await harness.send("GET", harness.api("/users/user_x")).status.code == 404)
        harness.clock.advance(by: 3600)
        #expect(await harness.send("GET", harness.api("/users/user_x")).status.code == 401)
    }

    @Test func usersValidateAndAnswerInMangopayShape() async throws {
        let harness = try await MangopayHarness.make()
        let id = try await harness.createUser()
        let read = await harness.send("GET", harness.api("/users/\(id)"))
        #expect(read.status == .ok)
        #expect(read.json["PersonType"] == .string("NATURAL"))
        #expect(read.json["Birthday"] == .int(188_352_000))
        #expect(read.json["TermsAndConditionsAccepted"] == .bool(true))
        #expect(read.json["Address"] == .null)
        #expect(!read.json.keys.contains("PendingUserAction"))

        let invalid = await harness.send(
            "POST", harness.api("/users/natural"), body: #"{"FirstName":true,"Email":"x","Birthday":"yesterday"}"#)
        #expect(invalid.status.code == 400)
        #expect(invalid.json["Type"] == .string("param_error"))
        #expect(Set(invalid.json["errors"]?.keys ?? []) == ["FirstName", "Birthday"])
        let semantic = await harness.send("POST", harness.api("/users/natural"), body: #"{"Email":"x"}"#)
        #expect(Set(semantic.json["errors"]?.keys ?? []) == ["FirstName", "LastName", "Email"])
        for body in ["", "{", "[1]", "null", #"{"a":"\ud800"}"#] {
            let malformed = await harness.send("POST", harness.api("/users/natural"), body: body)
            #expect(malformed.status.code == 400)
            #expect(malformed.json["errors"]?["Body"] != nil)
        }
        let sca = await harness.send(
            "POST", harness.api("/sca/users/natural"),
            body:
                #"{"FirstName":"A","LastName":"B","Email":"a@b.co","UserCategory":"PAYER","TermsAndConditionsAccepted":true}"#
        )
        #expect(sca.status == .ok)
        #expect(sca.json.keys.contains("PendingUserAction"))
        let update = await harness.send(
            "PUT", harness.api("/users/natural/\(id)"), body: #"{"Id":"ignored","CreationDate":1,"FirstName":"Jim"}"#)
        #expect(update.json["FirstName"] == .string("Jim") && update.json["Id"] == .string(id))
        let missing = await harness.send("GET", harness.api("/users/user_nope"))
        #expect(missing.status.code == 404)
        #expect(missing.json["Type"] == .string("ressource_not_found"))
        #expect(
            missing.json["errors"]?["RessourceNotFound"]
                == .string("Cannot found the ressource User with the id=user_nope "))
    }

    /// A store that cannot write (a full disk): writes get 503 with a Retry-After and a clear
    /// message, reads go on, and writes work again once the store does.
    @Test func aStoreThatCannotWriteAnswers503AndReadsGoOn() async throws {
        let store = WriteRefusingStore()
        let harness = try await MangopayHarness.make(store: store)
        let id = try await harness.createUser()
        store.refusing.withLock { $0 = true }
        let refused = await harness.send(
            "POST", harness.api("/users/natural"),
            body:
                #"{"FirstName":"A","LastName":"B","Email":"a@b.co","UserCategory":"PAYER","TermsAndConditionsAccepted":true}"#
        )
        #expect(refused.status.code == 503)
        #expect(refused.headers["Retry-After"] == "1")
        #expect(refused.json["Type"] == .string("service_unavailable"))
        #expect(refused.json["Message"]?.stringValue?.contains("retry later") == true)
        #expect(await harness.send("GET", harness.api("/users/\(id)")).status == .ok)
        store.refusing.withLock { $0 = false }
        _ = try await harness.createUser()
    }

    @Test func walletsAndLists() async throws {
        let harness = try await MangopayHarness.make()
        let user = try await harness.createUser()
        for index in 0..<3 {
            let wallet = await harness.send(
                "POST", harness.api("/wallets"),
                body: #"{"Currency":"EUR","Description":"W\#(index)","Owners":[""# + user + #""]}"#)
            #expect(wallet.json["Balance"] == .object([("Currency", .string("EUR")), ("Amount", .int(0))]))
        }
        let list = await harness.send("GET", harness.api("/users/\(user)/wallets?per_page=2&page=2&unknown=1"))
        #expect(list.json.arrayValue?.count == 1)
        #expect(list.headers["X-Number-Of-Items"] == "3" && list.headers["X-Number-Of-Pages"] == "2")
        let badPage = await harness.send("GET", harness.api("/users/\(user)/wallets?per_page=1000"))
        #expect(badPage.status.code == 400 && badPage.json["errors"]?["per_page"] != nil)
        let badCurrency = await harness.send(
            "POST", harness.api("/wallets"), body: #"{"Currency":"XPX","Description":"W","Owners":[""# + user + #""]}"#)
        #expect(badCurrency.json["errors"]?["Currency"] != nil)
        let wrongType = await harness.send(
            "POST", harness.api("/wallets"), body: #"{"Currency":"EUR","Description":"W","Owners":"u"}"#)
        #expect(wrongType.json["errors"]?["Owners"] != nil)
    }

    @Test func cardRegistrationFlowOverHTTP() async throws {
        let harness = try await MangopayHarness.make()
        let registration = try await harness.createRegistration()
        #expect(registration["Status"] == .string("CREATED"))
        let url = try #require(registration["CardRegistrationURL"]?.stringValue)
        #expect(url.hasPrefix("http://127.0.0.1:9999/tokenize/shop/"))

        let tokenized = await harness.tokenize(
            registration, headers: ["User-Agent": "Browser/1", "Origin": "https://shop.example"])
        #expect(tokenized.status == .ok)
        #expect(tokenized.bodyText.hasPrefix("data="))
        #expect(tokenized.headers["Access-Control-Allow-Origin"] == "https://shop.example")
        let reference = try #require(tokenized.headers["Profiling-Attempt-Reference"])
        let attempt = await harness.send("GET", harness.api("/profiling/attempts/\(reference)"))
        #expect(attempt.json["IpAddress"] == .string("192.0.2.10") && attempt.json["UserAgent"] == .string("Browser/1"))

        // The SDK sends the whole object back, read-only fields included.
        var members: [(String, MangopayJSON)] = []
        if case .object(let all) = registration { members = all.filter { $0.0 != "Id" } }
        members.removeAll { $0.0 == "RegistrationData" }
        members.append(("RegistrationData", .string(tokenized.bodyText)))
        members.append(("CardHolderName", .string("John Doe")))
        let updated = await harness.send(
            "PUT", harness.api("/cardregistrations/\(registration["Id"]!.stringValue!)"),
            body: MangopayJSON.object(members).text)
        #expect(updated.json["Status"] == .string("VALIDATED"))
        #expect(updated.json["ResultCode"] == .string("000000"))
        let cardId = try #require(updated.json["CardId"]?.stringValue)

        let card = await harness.send("GET", harness.api("/cards/\(cardId)"))
        #expect(card.json["Alias"] == .string("497010XXXXXX1119"))
        #expect(card.json["CardProvider"] == .string("VISA") && card.json["Active"] == .bool(true))
        #expect(card.json["Validity"] == .string("UNKNOWN") && card.json["CardHolderName"] == .string("John Doe"))
        #expect(!card.bodyText.contains("4970107111111119"))
        let fingerprint = try #require(card.json["Fingerprint"]?.stringValue)
        let byFingerprint = await harness.send(
            "GET", harness.api("/cards/fingerprints/\(fingerprint)?fingerprint=\(fingerprint)"))
        #expect(byFingerprint.json.arrayValue?.count == 1)
        let byUser = await harness.send("GET", harness.api("/users/\(card.json["UserId"]!.stringValue!)/cards"))
        #expect(byUser.json.arrayValue?.count == 1)
        let transactions = await harness.send("GET", harness.api("/cards/\(cardId)/transactions"))
        #expect(transactions.status == .ok && transactions.json == .array([]))

        // Deactivation with the SDK's integer 0, irreversible.
        let off = await harness.send(
            "PUT", harness.api("/cards/\(cardId)"), body: #"{"Active":0,"Alias":"x","Validity":"VALID"}"#)
        #expect(off.json["Active"] == .bool(false) && off.json["Validity"] == .string("UNKNOWN"))
        let on = await harness.send("PUT", harness.api("/cards/\(cardId)"), body: #"{"Active":true}"#)
        #expect(on.status.code == 400)

        // The access key was single use.
        let reused = await harness.tokenize(registration)
        #expect(reused.bodyText == "errorCode=09101")
    }

    @Test(arguments: [
        ("4970107111111118", "1229", "123", "02625", "105202"),
        ("4970107111111119", "0020", "123", "02626", "105203"),
        ("4970107111111119", "1229", "12", "02627", "105204"),
    ])
    func tokenizationErrorsReachTheRegistration(
        number: String, expiry: String, cvx: String, code: String, result: String
    ) async throws {
        let harness = try await MangopayHarness.make()
        let registration = try await harness.createRegistration()
        let tokenized = await harness.tokenize(registration, number: number, expiry: expiry, cvx: cvx)
        #expect(tokenized.bodyText == "errorCode=" + code)
        let updated = await harness.send(
            "PUT", harness.api("/cardregistrations/\(registration["Id"]!.stringValue!)"),
            body: #"{"RegistrationData":""# + tokenized.bodyText + #""}"#)
        #expect(updated.status == .ok)
        #expect(updated.json["Status"] == .string("ERROR") && updated.json["ResultCode"] == .string(result))
        #expect(updated.json["CardId"] == .null)
    }

    @Test func idempotencyReplaysConflictsAndIsReadable() async throws {
        let harness = try await MangopayHarness.make()
        let user = try await harness.createUser()
        let key = "b7c1e2d3-4f5a-6b7c-8d9e-0f1a2b3c4d5e"
        let body = #"{"Currency":"EUR","Description":"W","Owners":[""# + user + #""]}"#
        let first = await harness.send("POST", harness.api("/wallets"), body: body, headers: ["Idempotency-Key": key])
        let second = await harness.send("POST", harness.api("/wallets"), body: body, headers: ["Idempotency-Key": key])
        #expect(first.status == .ok && second.body == first.body)
        let other = await harness.send(
            "POST", harness.api("/wallets"), body: body.replacingOccurrences(of: "\"W\"", with: "\"X\""),
            headers: ["Idempotency-Key": key])
        #expect(other.status.code == 409 && other.json["Type"] == .string("idempotent_creation_conflict"))
        let stored = await harness.send("GET", harness.api("/responses//\(key)"))
        #expect(stored.json["StatusCode"] == .string("200"))
        #expect(stored.json["Resource"]?["Id"] == first.json["Id"])
        #expect(stored.json["Date"]?.stringValue?.hasSuffix(" GMT") == true)
        let unknown = await harness.send("GET", harness.api("/responses/0000000000000000"))
        #expect(unknown.status.code == 400 && unknown.json["Type"] == .string("correlationid_not_found"))
        let badKey = await harness.send(
            "POST", harness.api("/wallets"), body: body, headers: ["Idempotency-Key": "short"])
        #expect(badKey.status.code == 400)
    }

    @Test func corsPreflightOnlyForCheckoutOrigins() async throws {
        let harness = try await MangopayHarness.make()
        let allowed = await harness.send(
            "OPTIONS", "/tokenize/shop/cardreg_x", headers: ["Origin": "https://shop.example"], authorized: false)
        #expect(allowed.status.code == 204)
        #expect(allowed.headers["Access-Control-Allow-Methods"] == "POST, OPTIONS")
        let foreign = await harness.send(
            "OPTIONS", "/tokenize/shop/cardreg_x", headers: ["Origin": "https://evil.example"], authorized: false)
        #expect(foreign.headers["Access-Control-Allow-Origin"] == nil)
    }

    @Test func openAPIDocumentIsServed() async throws {
        let harness = try await MangopayHarness.make()
        let response = await harness.send("GET", "/openapi.yaml", authorized: false)
        #expect(response.status == .ok && response.bodyText.hasPrefix("openapi:"))
    }

    @Test(arguments: [
        "0", "-1", "1.5e2", #""a\u00e9\ud83d\ude00""#, #"{"a":[1,{"b":null}],"c":true}"#, "  [ ]  ",
    ])
    func jsonRoundTrips(text: String) throws {
        let value = try MangopayJSON.parse(Array(text.utf8))
        #expect(try MangopayJSON.parse(value.bytes) == value)
    }

    @Test(arguments: [
        "01", "1.", "-", "[1,]", "{\"a\" 1}", "\"\u{01}\"", "tru", "1 2", String(repeating: "[", count: 80),
    ])
    func jsonRejectsMalformedText(text: String) {
        #expect(throws: MangopayJSON.ParseError.self) { try MangopayJSON.parse(Array(text.utf8)) }
    }

    @Test func jsonStringsKeepTheirTextWithAndWithoutEscapes() throws {
        let cases: [(json: String, text: String)] = [
            (#""plain ascii""#, "plain ascii"), (#""""#, ""), ("\"café ☕\"", "café ☕"),
            (#""caf\u00e9 au lait""#, "café au lait"), (#""a\"b\\c\/d\n""#, "a\"b\\c/d\n"),
            ("\"é then \\t, then ü\"", "é then \t, then ü"), (#"{"k\u0041y":"v"}"#, ""),
        ]
        for (json, text) in cases.dropLast() {
            #expect(try MangopayJSON.parse(Array(json.utf8)) == .string(text), "\(json)")
        }
        #expect(try MangopayJSON.parse(Array(cases.last!.json.utf8)).keys == ["kAy"])
    }

    @Test(
        arguments: [
            [0x22, 0xC3, 0x28, 0x22], [0x22, 0xF0, 0x9F, 0x98, 0x22], [0x22, 0x5C, 0x6E, 0xFF, 0x22],
            [0x22, 0x61, 0x0A, 0x22],
            [0x22, 0x61], [0x22, 0x61, 0x5C], [0x22, 0x5C, 0x6E, 0x61],
        ] as [[UInt8]])
    func jsonRejectsStringsThatAreNotUTF8OrNotClosed(bytes: [UInt8]) {
        #expect(throws: MangopayJSON.ParseError.self) { try MangopayJSON.parse(bytes) }
    }

    @Test func httpDates() {
        #expect(MangopayWire.httpDate(1_452_723_956) == "Wed, 13 Jan 2016 22:25:56 GMT")
        #expect(MangopayWire.httpDate(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
    }
}

/// An in-memory store whose writes fail as the file store's do on a full disk, while `refusing`.
final class WriteRefusingStore: RecordStore {
    let base = InMemoryRecordStore()
    let refusing = Locked(false)

    func get(_ collection: String, id: String) async throws -> Record? { try await base.get(collection, id: id) }

    func commit(_ writes: [RecordWrite]) async throws -> [UInt64] {
        if refusing.withLock({ $0 }) {
            throw StoreError(.unavailable, "the store cannot write now (No space left on device); reads still work")
        }
        return try await base.commit(writes)
    }

    func scan(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> [Record] {
        try await base.scan(collection, prefix: prefix, after: after, limit: limit)
    }

    func count(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> Int {
        try await base.count(collection, prefix: prefix, after: after, limit: limit)
    }
}
