import CardKit
import Foundation
import OutboundHTTP
import Payments
import Testing
import VaultCore
import VaultCrypto
import VaultStore

@testable import Forward

/// A resolver that answers from a table (so no test depends on DNS).
struct TableResolver: HostResolving {
    let table: [String: [IPAddress]]
    func addresses(of host: String) async throws(OutboundHTTPError) -> [IPAddress] {
        if let literal = IPAddress(host) { return [literal] }
        guard let found = table[host] else { throw OutboundHTTPError(.unresolvable, "unknown host") }
        return found
    }
}

/// A merchant API over an in-memory store, a forward service over it, and a card or two.
struct ForwardFixture {
    let store = InMemoryRecordStore()
    let services: MerchantServices
    let forward: ForwardService
    static let visa = "4970107111111119"
    static let mastercard = "5555555555554444"

    init(
        destinations: [String] = ["https://psp.example/v1/", "https://127.0.0.1:1/psp/"],
        privateNetworks: [String] = ["127.0.0.1/32"]
    ) {
        let environment = PaymentsEnvironment(
            store: store, clock: ManualClock(Date()), random: RandomPool(),
            fingerprintKeys: DerivedFingerprintKeys(secret: .random()),
            configuration: PaymentsConfiguration(publicBaseURL: "https://vault.example/"), logger: .disabled)
        services = MerchantServices(environment: environment)
        let client = OutboundHTTPClient(
            configuration: OutboundHTTPConfiguration(
                connectTimeoutMilliseconds: 2000, timeoutMilliseconds: 3000,
                addressPolicy: AddressPolicy(allowedSpecialNetworks: privateNetworks.compactMap { IPNetwork($0) })),
            resolver: TableResolver(table: [
                "psp.example": [IPAddress("93.184.216.34")!], "rebind.example": [IPAddress("10.0.0.7")!],
            ]))
        forward = ForwardService(
            configuration: ForwardConfiguration(
                destinations: destinations.map { try! DestinationPrefix(parsing: $0) } + [
                    try! DestinationPrefix(parsing: "https://rebind.example/")
                ]),
            services: services, client: client)
    }

    /// A registered card of `clientId` whose security code is held.
    func card(_ clientId: String = "shop", number: String = visa, cvx: String = "737") async throws -> Card {
        var fields = UserFields()
        fields.firstName = "John"
        fields.lastName = "Doe"
        fields.email = "john@example.com"
        let user = try await services.users.create(clientId: clientId, type: .natural, sca: false, fields: fields)
        let registration = try await services.cardRegistrations.create(
            clientId: clientId, userId: user.id, currency: "EUR", cardType: nil, tag: nil)
        let form = TokenizationForm(
            data: registration.preregistrationData, accessKeyRef: registration.accessKey, cardNumber: number,
            cardExpirationDate: "1229", cardCvx: cvx)
        guard
            case .success(let token, _) = try await services.cardRegistrations.tokenize(
                clientId: clientId, id: registration.id, form: form, signals: DeviceSignals(ipAddress: "192.0.2.1"))
        else { throw ForwardError(.invalidParameters, "tokenization failed") }
        let done = try await services.cardRegistrations.update(
            clientId: clientId, id: registration.id, registrationData: "data=" + token.unsafeRevealed,
            cardHolderName: "John Doe", tag: nil)
        return try await services.cards.get(clientId: clientId, id: done.cardId!)
    }

    func permit(_ clientId: String = "shop") async throws {
        try await forward.permissions.set(clientId: clientId, enabled: true, now: 0)
    }

    func send(_ request: ForwardRequest, clientId: String = "shop") async -> Result<ForwardResult, ForwardError> {
        do {
            return .success(
                try await forward.forward(clientId: clientId, request: request, requestId: "req-1", logger: .disabled))
        } catch {
            return .failure(error)
        }
    }

    func accessCount() async throws -> Int { try await store.scanAll("card-accesses").count }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

@Suite struct ForwardServiceTests {
    static func body(_ cardId: String) -> ForwardRequest {
        ForwardRequest(
            url: "https://psp.example/v1/charge", method: "POST", headers: [("Content-Type", "application/json")],
            body: #"{"number":"{{card.\#(cardId).number}}","cvc":"{{card.\#(cardId).cvc}}"}"#)
    }

    @Test func aClientWithoutPermissionIsRefusedBeforeAnyCardIsRead() async throws {
        let fixture = ForwardFixture()
        let card = try await fixture.card()
        let error = await fixture.send(Self.body(card.id)).failure
        #expect(error?.code == .notPermitted)
        #expect(try await fixture.accessCount() == 0)
        #expect(fixture.services.securityCodes.isHeld(clientId: "shop", cardId: card.id))
        #expect(fixture.forward.metrics.count(.refusedPermission) == 1)
    }

    @Test(arguments: [
        ("https://evil.example/v1/charge", ForwardError.Code.destinationRefused),
        ("https://psp.example/v2/charge", .destinationRefused),
        ("https://psp.example:444/v1/charge", .destinationRefused),
        ("http://psp.example/v1/charge", .invalidParameters),
        ("https://psp.example/v1/../admin", .invalidParameters),
        ("https://psp.example@evil.example/v1/", .invalidParameters),
        ("https://rebind.example/x", .destinationRefused),
        ("https://unknown.example/x", .destinationRefused),
    ])
    func aDisallowedUrlIsRefusedNamingUrlBeforeAnyCardIsRead(_ url: String, _ code: ForwardError.Code) async throws {
        let fixture = ForwardFixture()
        try await fixture.permit()
        let card = try await fixture.card()
        var request = Self.body(card.id)
        request.url = url
        let error = await fixture.send(request).failure
        #expect(error?.code == code)
        #expect(error?.fieldErrors["Url"] != nil)
        #expect(try await fixture.accessCount() == 0)
        #expect(fixture.services.securityCodes.isHeld(clientId: "shop", cardId: card.id))
    }

    @Test func aPrivateAddressIsAllowedOnlyWhenConfigured() async throws {
        let fixture = ForwardFixture(privateNetworks: [])
        try await fixture.permit()
        let card = try await fixture.card()
        var request = Self.body(card.id)
        request.url = "https://127.0.0.1:1/psp/charge"
        #expect(await fixture.send(request).failure?.code == .destinationRefused)
        #expect(try await fixture.accessCount() == 0)
    }

    @Test func anotherClientsCardOrAnUnknownCardIsNotFoundAndNothingIsSent() async throws {
        let fixture = ForwardFixture()
        try await fixture.permit()
        let theirs = try await fixture.card("other-shop")
        let mine = try await fixture.card()
        for id in [theirs.id, "card_doesnotexist"] {
            let request = ForwardRequest(
                url: "https://psp.example/v1/charge", headers: [("Content-Type", "application/json")],
                body: #"{"a":"{{card.\#(mine.id).number}}","b":"{{card.\#(id).number}}"}"#)
            let error = await fixture.send(request).failure
            #expect(error?.code == .cardNotFound)
            #expect(error?.fieldErrors["Body"]?.contains(id) == true)
        }
        #expect(try await fixture.accessCount() == 0)
        #expect(fixture.services.securityCodes.isHeld(clientId: "other-shop", cardId: theirs.id))
    }

    @Test func aCardNumberPastedAsCardIdIsNotEchoed() async throws {
        let fixture = ForwardFixture()
        try await fixture.permit()
        let request = ForwardRequest(
            url: "https://psp.example/v1/charge", headers: [("Content-Type", "application/json")],
            body: "{{card.4970107111111119.number}}")
        let error = await fixture.send(request).failure
        #expect(error?.code == .cardNotFound)
        let shown = "\(error?.fieldErrors ?? [:]) \(error?.message ?? "")"
        #expect(!shown.contains("4970107111111119"))
    }

    @Test func requestFieldsAreChecked() async throws {
        let fixture = ForwardFixture()
        try await fixture.permit()
        let card = try await fixture.card()
        let cases: [(ForwardRequest, String)] = [
            (ForwardRequest(url: nil), "Url"),
            (ForwardRequest(url: "https://psp.example/v1/x", method: "TRACE"), "Method"),
            (ForwardRequest(url: "https://psp.example/v1/x", headers: [("Host", "evil")]), "Headers.Host"),
            (ForwardRequest(url: "https://psp.example/v1/x", headers: [("X-A", "a\r\nb")]), "Headers.X-A"),
            (
                ForwardRequest(
                    url: "https://psp.example/v1/x", headers: [("Content-Type", "{{card.\(card.id).number}}")],
                    body: "x"), "Headers.Content-Type"
            ),
            (
                ForwardRequest(
                    url: "https://psp.example/v1/x", headers: [("Content-Type", "text/plain")],
                    body: "{{card.\(card.id).pan}}"), "Body"
            ),
        ]
        for (request, field) in cases {
            let error = await fixture.send(request).failure
            #expect(error?.code == .invalidParameters, "\(field)")
            #expect(error?.fieldErrors[field] != nil, "\(field): \(error?.fieldErrors ?? [:])")
        }
        #expect(try await fixture.accessCount() == 0)
    }

    @Test func aSecurityCodeNoLongerHeldIsRefusedBeforeAnyCardIsRead() async throws {
        let fixture = ForwardFixture()
        try await fixture.permit()
        let card = try await fixture.card()
        _ = fixture.services.securityCodes.take(clientId: "shop", cardId: card.id)
        let error = await fixture.send(Self.body(card.id)).failure
        #expect(error?.code == .invalidParameters)
        #expect(error?.fieldErrors["Body"]?.contains("no longer held") == true)
        #expect(try await fixture.accessCount() == 0)
    }

    @Test func aFailedSendIsAuditedAndUsesTheSecurityCode() async throws {
        let fixture = ForwardFixture()
        try await fixture.permit()
        let card = try await fixture.card()
        let runner = Task { try await fixture.forward.client.run() }
        defer { runner.cancel() }
        for _ in 0..<200 where !fixture.forward.client.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        var request = Self.body(card.id)
        request.url = "https://127.0.0.1:1/psp/charge"
        let error = await fixture.send(request).failure
        #expect(error?.code == .destinationFailed)
        let accesses = try await fixture.forward.accesses(clientId: "shop", cardId: card.id, page: PageRequest())
        #expect(accesses.items.count == 1)
        #expect(accesses.items.first?.outcome == .failed)
        #expect(accesses.items.first?.destinationHost == "127.0.0.1")
        #expect(accesses.items.first?.fields == ["cvc", "number"])
        #expect(accesses.items.first?.requestId == "req-1")
        #expect(!fixture.services.securityCodes.isHeld(clientId: "shop", cardId: card.id))
    }

    @Test func theAnswerIsScrubbedOfEveryVaultedNumberOfTheClient() async throws {
        let fixture = ForwardFixture()
        let card = try await fixture.card()
        let other = try await fixture.card(number: ForwardFixture.mastercard)
        let foreign = try await fixture.card("other-shop", number: "4012888888881881")
        _ = (card, other, foreign)
        let sent = try PAN(ForwardFixture.visa)
        let answer = WipedBuffer(
            copying: Array(
                "v=4970 1071 1111 1119 m=5555-5555-5555-4444 f=4012888888881881 n=4111111111111111".utf8))
        let scrubbed = try await fixture.forward.scrub(answer, clientId: "shop", sent: [sent])
        let text = scrubbed.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        #expect(text == "v=497010XXXXXX1119 m=555555XXXXXX4444 f=4012888888881881 n=4111111111111111")
    }
}
