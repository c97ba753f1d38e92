import CardKit
import Foundation
public import OutboundHTTP
public import Payments
public import VaultCore
import VaultCrypto
import VaultStore

/// What a merchant asks to forward: destination, method, headers and body, the last two with placeholders.
public struct ForwardRequest: Sendable {
    public var url: String?
    public var method: String?
    public var headers: [(name: String, value: String)]
    public var body: String?

    public init(url: String?, method: String? = nil, headers: [(name: String, value: String)] = [], body: String? = nil)
    {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
    }
}

/// The destination's answer as the merchant gets it: every vaulted card number of the client replaced by its alias.
public struct ForwardResult: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: String
}

/// Detokenize and forward: substitutes a client's card data into a request, sends it to an allow-listed HTTPS
/// destination, audits the access on each card, and hands back the answer with card numbers masked.
///
/// Every check that can refuse the request runs before any card number is read: the client's permission, the
/// request's fields and placeholders, the destination against `forward.destinations` and its addresses against
/// the address policy, the cards' existence and state. Then the accesses are written (`PENDING`), the numbers
/// read, the request sent, and the accesses completed with the destination's status.
public final class ForwardService: Sendable {
    public let configuration: ForwardConfiguration
    public let client: OutboundHTTPClient
    public let permissions: ForwardPermissions
    public let metrics = ForwardMetrics()
    let environment: PaymentsEnvironment
    let cards: CardService
    let securityCodes: SecurityCodeHold
    let log: CardAccessLog

    /// Headers a merchant may not set: libcurl or HTTP itself decides them.
    static let managedHeaders: Set<String> = [
        "host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer",
        "expect", "proxy-authorization", "proxy-connection", "accept-encoding",
    ]
    static let maximumHeaders = 50
    static let maximumHeaderBytes = 16 << 10
    /// Candidate numbers in one answer looked up in the vault; any beyond are masked without a lookup.
    static let maximumLookups = 256

    public init(
        configuration: ForwardConfiguration, services: MerchantServices, client: OutboundHTTPClient
    ) {
        self.configuration = configuration
        self.client = client
        self.environment = services.environment
        self.cards = services.cards
        self.securityCodes = services.securityCodes
        self.permissions = ForwardPermissions(store: services.environment.store)
        self.log = CardAccessLog(store: services.environment.store)
    }

    // MARK: - Forwarding

    /// Forwards `request` for `clientId`.
    /// - Throws: ``ForwardError``; a store failure while auditing is `.unavailable`.
    public func forward(
        clientId: String, request: ForwardRequest, requestId: String, logger: Logger
    ) async throws(ForwardError) -> ForwardResult {
        do {
            return try await run(clientId: clientId, request: request, requestId: requestId, logger: logger)
        } catch let error as ForwardError {
            throw error
        } catch let error as StoreError {
            logger.warning("forward audit not written", ["error": .string(error.code.description)])
            throw ForwardError(.unavailable, "The audit of the card access could not be written; retry later")
        } catch {
            logger.warning("forward failed", ["error": .string(String(describing: type(of: error)))])
            throw ForwardError(.unavailable, "The forward could not be completed; retry later")
        }
    }

    private func refuse(_ outcome: ForwardMetrics.Outcome, _ error: ForwardError) -> ForwardError {
        metrics.record(outcome)
        return error
    }

    private func run(
        clientId: String, request: ForwardRequest, requestId: String, logger: Logger
    ) async throws -> ForwardResult {
        guard try await permissions.isEnabled(clientId: clientId) else {
            throw refuse(
                .refusedPermission,
                ForwardError(
                    .notPermitted,
                    "Forwarding card data is not enabled for this client (the operator turns it on with "
                        + "`cardvault clients forward <ClientId> --on`)"))
        }
        let plan = try await prepare(request)
        let cardIds = plan.cardIds
        // The cards: this client's, active, with a security code still held where one is asked for.
        var records: [String: Card] = [:]
        for cardId in cardIds {
            let field = plan.fieldNaming[cardId] ?? "Body"
            let card: Card
            do {
                card = try await cards.get(clientId: clientId, id: cardId)
            } catch let error as PaymentsError where error.code == .notFound {
                throw refuse(
                    .refusedCard,
                    ForwardError(
                        .cardNotFound, "The ressource does not exist",
                        fieldErrors: [field: "no card \(Self.printable(cardId)) for this client"]))
            }
            guard card.active else {
                throw refuse(.refusedCard, ForwardError.invalid(field, "card \(cardId) is deactivated"))
            }
            if plan.cvcCards.contains(cardId), !securityCodes.isHeld(clientId: clientId, cardId: cardId) {
                throw refuse(.refusedCard, Self.securityCodeGone(cardId, field: field))
            }
            records[cardId] = card
        }
        guard client.isRunning else {
            throw refuse(.busy, ForwardError(.unavailable, "Forwarding is not available right now; retry later"))
        }
        guard client.inFlight < configuration.client.maxConcurrentTransfers else {
            throw refuse(.busy, ForwardError(.busy, "Too many forwards are in flight; retry shortly"))
        }
        // The accesses are on record before any number is read.
        let now = Int64(environment.clock.now.timeIntervalSince1970.rounded(.down))
        let accessId = Self.accessId(now: environment.clock.now, random: environment.random)
        var accesses = cardIds.map { cardId in
            CardAccess(
                id: accessId, clientId: clientId, cardId: cardId, operation: "FORWARD", method: plan.method,
                destinationHost: plan.url.host, fields: plan.fields[cardId, default: []].map(\.rawValue).sorted(),
                requestId: requestId, status: nil, outcome: .pending, creationDate: now)
        }
        if !accesses.isEmpty {
            try await log.write(accesses)
            metrics.recordAccesses(accesses.count)
        }
        func complete(_ outcome: CardAccess.Outcome, status: Int?) async {
            guard !accesses.isEmpty else { return }
            for index in accesses.indices {
                accesses[index].outcome = outcome
                accesses[index].status = status
            }
            do {
                try await log.write(accesses)
            } catch {
                logger.warning("card access not completed", ["accessId": .string(accessId)])
            }
        }

        // Card data, in wiped buffers only.
        var values: [CardPlaceholder: WipedBuffer] = [:]
        var numbers: [PAN] = []
        for cardId in cardIds {
            guard let card = records[cardId] else { continue }
            let vaulted: (PAN, CardExpiry)
            do {
                vaulted = try await cards.vaultedNumber(clientId: clientId, cardId: cardId)
            } catch {
                await complete(.failed, status: nil)
                throw refuse(
                    .refusedCard,
                    ForwardError(
                        .cardNotFound, "The ressource does not exist",
                        fieldErrors: [plan.fieldNaming[cardId] ?? "Body": "card \(cardId) has no vaulted number"]))
            }
            let pan = vaulted.0
            let expiry = vaulted.1
            numbers.append(pan)
            for field in plan.fields[cardId, default: []] {
                let value = WipedBuffer(capacity: 24)
                switch field {
                case .number:
                    pan.withASCIIDigits { digits in
                        if let base = digits.baseAddress { value.append(UnsafeRawPointer(base), length: digits.count) }
                    }
                case .expiry: value.append(contentsOf: expiry.mmyy.utf8)
                case .expiryMonth: value.append(contentsOf: expiry.mmyy.utf8.prefix(2))
                case .expiryYear: value.append(contentsOf: String(expiry.year).utf8)
                case .holder: value.append(contentsOf: (card.cardHolderName ?? "").utf8)
                case .cvc:
                    guard let code = securityCodes.take(clientId: clientId, cardId: cardId) else {
                        await complete(.failed, status: nil)
                        throw refuse(
                            .refusedCard, Self.securityCodeGone(cardId, field: plan.fieldNaming[cardId] ?? "Body"))
                    }
                    code.withUnsafeBytes { raw in
                        if let base = raw.baseAddress { value.append(base, length: raw.count) }
                    }
                }
                values[CardPlaceholder(cardId: cardId, field: field)] = value
            }
        }
        let empty = WipedBuffer()
        let lookup: (CardPlaceholder) -> WipedBuffer = { values[$0] ?? empty }
        var headers: [OutboundHeader] = []
        for header in plan.headers {
            let value = WipedBuffer(capacity: header.template.literalByteCount + 32)
            header.template.render(into: value, escaping: .raw, value: lookup)
            // A holder's name with a line break must not split a header.
            guard !value.contains(0x0D), !value.contains(0x0A), !value.contains(0) else {
                await complete(.failed, status: nil)
                throw refuse(
                    .refusedRequest,
                    ForwardError.invalid("Headers." + header.name, "the substituted value holds a line break"))
            }
            headers.append(OutboundHeader(name: header.name, value: value))
        }
        var body: WipedBuffer?
        if let template = plan.body {
            let rendered = WipedBuffer(capacity: template.literalByteCount + 64)
            template.render(into: rendered, escaping: plan.bodyEscaping, value: lookup)
            guard rendered.count <= configuration.maxRequestBodyBytes else {
                await complete(.failed, status: nil)
                throw refuse(
                    .refusedRequest,
                    ForwardError.invalid("Body", "the body is larger than \(configuration.maxRequestBodyBytes) bytes"))
            }
            body = rendered
        }
        for value in values.values { value.wipe() }

        // Send.
        let response: OutboundResponse
        do {
            response = try await client.send(
                OutboundRequest(
                    url: plan.url, addresses: plan.addresses, method: plan.method, headers: headers, body: body))
        } catch {
            body?.wipe()
            for header in headers { header.value.wipe() }
            let timedOut = error.code == .timeout
            await complete(timedOut ? .timeout : .failed, status: nil)
            logger.notice(
                "card data forward failed",
                [
                    "clientId": .string(clientId), "cards": .string(cardIds.joined(separator: ",")),
                    "destinationHost": .string(plan.url.host), "failure": .string(error.code.rawValue),
                    "curlCode": .int(error.curlCode ?? 0),
                ])
            throw refuse(timedOut ? .timeout : (error.code == .busy ? .busy : .failed), Self.mapped(error))
        }
        body?.wipe()
        for header in headers { header.value.wipe() }
        metrics.recordResponse(seconds: response.duration)

        // Mask every vaulted number of this client in the answer.
        let scrubbedHeaders = try await scrub(response.headerLines, clientId: clientId, sent: numbers)
        let scrubbedBody = try await scrub(response.body, clientId: clientId, sent: numbers)
        let headerText = scrubbedHeaders.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        let bodyText = scrubbedBody.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        // (A scrub that found nothing hands back the same buffer.)
        for buffer in [response.headerLines, response.body, scrubbedHeaders, scrubbedBody] { buffer.wipe() }
        await complete(.sent, status: response.status)
        metrics.record(.sent)
        logger.notice(
            "card data forwarded",
            [
                "clientId": .string(clientId), "cards": .string(cardIds.joined(separator: ",")),
                "destinationHost": .string(plan.url.host), "method": .string(plan.method),
                "status": .int(response.status), "durationMs": .int(Int(response.duration * 1000)),
            ])
        let hidden: Set<String> = [
            "connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding",
        ]
        return ForwardResult(
            status: response.status,
            headers: OutboundResponse.parseHeaderLines(headerText).filter { !hidden.contains($0.0.lowercased()) }
                .map { (name: $0.0, value: $0.1) },
            body: bodyText)
    }

    // MARK: - Checks before any card is read

    struct HeaderPlan {
        var name: String
        var template: ForwardTemplate
    }

    struct Plan {
        var url: DestinationURL
        var addresses: [IPAddress]
        var method: String
        var headers: [HeaderPlan]
        var body: ForwardTemplate?
        var bodyEscaping: TemplateEscaping
        /// Cards in order of first appearance.
        var cardIds: [String]
        var fields: [String: Set<CardField>]
        var cvcCards: Set<String>
        /// The request field where each card is first named (`Body`, `Headers.X-Card`).
        var fieldNaming: [String: String]
    }

    private func prepare(_ request: ForwardRequest) async throws -> Plan {
        guard let urlText = request.url, !urlText.isEmpty else {
            throw refuse(.refusedRequest, ForwardError.invalid("Url", "Url is required"))
        }
        let url: DestinationURL
        do {
            url = try DestinationURL(parsing: urlText)
        } catch {
            throw refuse(.refusedDestination, ForwardError.invalid("Url", "Url " + error.reason))
        }
        guard configuration.destinations.contains(where: { $0.allows(url) }) else {
            throw refuse(
                .refusedDestination,
                ForwardError.refused("it does not start with a destination the operator allowed (forward.destinations)")
            )
        }
        let method = (request.method ?? "POST").uppercased()
        guard OutboundRequest.methods.contains(method) else {
            throw refuse(
                .refusedRequest, ForwardError.invalid("Method", "Method must be GET, POST, PUT, PATCH or DELETE"))
        }
        var headers: [HeaderPlan] = []
        var contentType: String?
        var headerBytes = 0
        var seen: Set<String> = []
        guard request.headers.count <= Self.maximumHeaders else {
            throw refuse(.refusedRequest, ForwardError.invalid("Headers", "at most \(Self.maximumHeaders) headers"))
        }
        for (name, value) in request.headers {
            let field = "Headers." + (Self.isToken(name) ? name : "(invalid)")
            guard Self.isToken(name), name.utf8.count <= 100 else {
                throw refuse(.refusedRequest, ForwardError.invalid(field, "a header name must be an HTTP token"))
            }
            let lower = name.lowercased()
            guard !Self.managedHeaders.contains(lower), !lower.hasPrefix("proxy-") else {
                throw refuse(.refusedRequest, ForwardError.invalid(field, "CardVault sets this header itself"))
            }
            guard seen.insert(lower).inserted else {
                throw refuse(.refusedRequest, ForwardError.invalid(field, "the header is given twice"))
            }
            guard value.utf8.allSatisfy({ $0 >= 0x20 || $0 == 0x09 }), !value.utf8.contains(0x7F) else {
                throw refuse(
                    .refusedRequest, ForwardError.invalid(field, "a header value must not hold control characters"))
            }
            headerBytes += name.utf8.count + value.utf8.count
            guard headerBytes <= Self.maximumHeaderBytes else {
                throw refuse(
                    .refusedRequest,
                    ForwardError.invalid("Headers", "the headers exceed \(Self.maximumHeaderBytes) bytes"))
            }
            let template: ForwardTemplate
            do {
                template = try ForwardTemplate(parsing: value)
            } catch {
                throw refuse(.refusedRequest, ForwardError.invalid(field, "the value " + error.reason))
            }
            if lower == "content-type" {
                guard template.placeholders.isEmpty else {
                    throw refuse(.refusedRequest, ForwardError.invalid(field, "Content-Type cannot hold placeholders"))
                }
                contentType = value
            }
            headers.append(HeaderPlan(name: name, template: template))
        }
        var body: ForwardTemplate?
        if let text = request.body {
            guard text.utf8.count <= configuration.maxRequestBodyBytes else {
                throw refuse(
                    .refusedRequest,
                    ForwardError.invalid("Body", "the body is larger than \(configuration.maxRequestBodyBytes) bytes"))
            }
            do {
                body = try ForwardTemplate(parsing: text)
            } catch {
                throw refuse(.refusedRequest, ForwardError.invalid("Body", "the body " + error.reason))
            }
            if contentType == nil {
                // No Content-Type given: JSON when the body looks like JSON, else plain text (never libcurl's
                // default of a form).
                let first = text.utf8.first { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }
                let guessed = first == 0x7B || first == 0x5B ? "application/json" : "text/plain; charset=utf-8"
                contentType = guessed
                headers.append(HeaderPlan(name: "Content-Type", template: try! ForwardTemplate(parsing: guessed)))
            }
        }
        // Which cards, which fields, named where.
        var cardIds: [String] = []
        var fields: [String: Set<CardField>] = [:]
        var fieldNaming: [String: String] = [:]
        let named = headers.map { ("Headers." + $0.name, $0.template) } + (body.map { [("Body", $0)] } ?? [])
        for (field, template) in named {
            for placeholder in template.placeholders {
                if fields[placeholder.cardId] == nil {
                    cardIds.append(placeholder.cardId)
                    fieldNaming[placeholder.cardId] = field
                }
                fields[placeholder.cardId, default: []].insert(placeholder.field)
            }
        }
        guard cardIds.count <= configuration.maxCardsPerForward else {
            throw refuse(
                .refusedRequest,
                ForwardError.invalid("Body", "at most \(configuration.maxCardsPerForward) cards per forward"))
        }
        for cardId in cardIds where !Identifier.isWellFormed(cardId) {
            throw refuse(
                .refusedCard, ForwardError.invalid(fieldNaming[cardId] ?? "Body", "a card id is malformed"))
        }
        // The destination's addresses, checked now and pinned for the transfer.
        let addresses: [IPAddress]
        do {
            addresses = try await client.checkedAddresses(for: url)
        } catch  where error.code == .unresolvable {
            throw refuse(.refusedDestination, ForwardError.invalid("Url", "the host of Url cannot be resolved"))
        } catch {
            throw refuse(
                .refusedDestination,
                ForwardError.refused(
                    "its host resolves to an address outside the allowed ranges (private ranges need forward.privateNetworks)"
                ))
        }
        return Plan(
            url: url, addresses: addresses, method: method, headers: headers, body: body,
            bodyEscaping: ForwardTemplate.escaping(forContentType: contentType), cardIds: cardIds, fields: fields,
            cvcCards: Set(cardIds.filter { fields[$0]?.contains(.cvc) == true }), fieldNaming: fieldNaming)
    }

    static func securityCodeGone(_ cardId: String, field: String) -> ForwardError {
        ForwardError.invalid(
            field,
            "the security code of card \(cardId) is no longer held (it is kept only until the card's first use, "
                + "at most one hour)")
    }

    static func mapped(_ error: OutboundHTTPError) -> ForwardError {
        switch error.code {
        case .timeout: ForwardError(.timeout, "The destination did not answer in time: " + error.message)
        case .busy: ForwardError(.busy, "Too many forwards are in flight; retry shortly")
        case .addressRefused: ForwardError.refused("the destination's address is not allowed")
        default: ForwardError(.destinationFailed, "The forward to the destination failed: " + error.message)
        }
    }

    /// True when `text` is an HTTP token (a valid header name).
    public static func isToken(_ text: String) -> Bool {
        !text.isEmpty
            && text.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
    }

    /// `id` as an error may show it: never a run of 12 or more digits (a card number pasted as a card id).
    static func printable(_ id: String) -> String {
        var run = 0
        for byte in id.utf8 {
            run = byte >= 0x30 && byte <= 0x39 ? run + 1 : 0
            if run >= 12 { return "(invalid)" }
        }
        return Identifier.isWellFormed(id) ? id : "(invalid)"
    }

    /// `acc_` + Unix milliseconds (15 digits, so ids sort in time) + 26 random characters.
    static func accessId(now: Date, random: any RandomSource) -> String {
        let millis = String(now.millisecondsSince1970)
        return "acc_" + String(repeating: "0", count: max(0, 15 - millis.count)) + millis
            + Identifier.make("", random: random)
    }

    // MARK: - Masking the answer

    /// `buffer` with every vaulted number of `clientId` replaced by its alias: those just sent anywhere, others
    /// when they are whole digit groups whose fingerprint the client's vault knows.
    func scrub(_ buffer: WipedBuffer, clientId: String, sent: [PAN]) async throws -> WipedBuffer {
        let found = buffer.withUnsafeBytes { bytes in
            (CardNumberScrubber.knownMatches(in: bytes, numbers: sent), CardNumberScrubber.candidates(in: bytes))
        }
        var matches = found.0
        var verdicts: [PAN: Bool] = [:]
        for pan in sent { verdicts[pan] = true }
        for candidate in found.1 {
            if let verdict = verdicts[candidate.pan] {
                if verdict { matches.append(candidate) }
                continue
            }
            let vaulted =
                verdicts.count >= Self.maximumLookups + sent.count
                ? true : try await isVaulted(candidate.pan, clientId: clientId)
            verdicts[candidate.pan] = vaulted
            if vaulted { matches.append(candidate) }
        }
        guard !matches.isEmpty else { return buffer }
        return buffer.withUnsafeBytes { CardNumberScrubber.replacing(matches, in: $0) }
    }

    /// Whether the client has a card with this number (its fingerprint under the client's key is indexed).
    func isVaulted(_ pan: PAN, clientId: String) async throws -> Bool {
        let key = try environment.fingerprintKeys.fingerprintKey(forClient: clientId)
        let mac = pan.withASCIIDigits { HMACSHA256.authenticationCode(for: UnsafeRawBufferPointer($0), using: key) }
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        var fingerprint = [UInt8]()
        for byte in mac.prefix(16) {
            fingerprint.append(hex[Int(byte >> 4)])
            fingerprint.append(hex[Int(byte & 15)])
        }
        let page = try await cards.list(
            clientId: clientId, fingerprint: String(decoding: fingerprint, as: UTF8.self),
            page: PageRequest(page: 1, perPage: 1))
        return page.totalItems > 0
    }

    // MARK: - Audit

    /// The accesses of card `cardId` of `clientId`, oldest first unless the page asks otherwise.
    /// - Throws: ``PaymentsError`` `.notFound` for a card the client does not have.
    public func accesses(clientId: String, cardId: String, page: PageRequest) async throws -> Page<CardAccess> {
        _ = try await cards.get(clientId: clientId, id: cardId)
        var all = try await log.accesses(clientId: clientId, cardId: cardId)
        if page.newestFirst { all.reverse() }
        let start = (page.page - 1) * page.perPage
        let items = start < all.count ? Array(all[start..<min(all.count, start + page.perPage)]) : []
        return Page(items: items, totalItems: all.count, totalPages: (all.count + page.perPage - 1) / page.perPage)
    }
}
