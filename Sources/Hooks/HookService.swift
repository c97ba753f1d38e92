import Foundation
public import OutboundHTTP
public import Payments
public import VaultCore
public import VaultStore

/// What a hook's URL may be and where it may lead: `https` only, unless private destinations are allowed (for
/// development), when `http` is accepted for them too.
public struct HookDestinationPolicy: Sendable, Equatable {
    /// `hooks.allowPrivateAddresses`: loopback, private, link-local and metadata addresses become reachable.
    public var allowPrivateAddresses: Bool

    public init(allowPrivateAddresses: Bool = false) {
        self.allowPrivateAddresses = allowPrivateAddresses
    }

    /// The outbound client's address policy: public addresses, plus every special-purpose range when allowed.
    public var addressPolicy: AddressPolicy {
        AddressPolicy(allowedSpecialNetworks: allowPrivateAddresses ? AddressPolicy.specialNetworks : [])
    }

    /// Parses a hook URL. - Throws: the problem, as a sentence to follow `Url`.
    public func parse(_ text: String) throws(DestinationURL.Problem) -> DestinationURL {
        try DestinationURL(parsing: text, allowQuery: true, allowPlainHTTP: allowPrivateAddresses)
    }
}

/// The merchant API's hooks and events: `POST`/`PUT`/`GET /hooks[/{id}]`, `GET /events`, the per-client signing
/// secret, and the operator's view of deliveries (failures, retry, replay).
public struct HookService: Sendable {
    public let environment: PaymentsEnvironment
    public let policy: HookDestinationPolicy
    let resolver: any HostResolving

    public init(
        environment: PaymentsEnvironment, policy: HookDestinationPolicy = HookDestinationPolicy(),
        resolver: any HostResolving = SystemHostResolver()
    ) {
        self.environment = environment
        self.policy = policy
        self.resolver = resolver
    }

    var store: any RecordStore { environment.store }
    var now: Int64 { Int64(environment.clock.now.timeIntervalSince1970.rounded(.down)) }

    static func hookKey(_ clientId: String, _ id: String) -> String { clientId + ":" + id }
    static func eventKey(_ clientId: String, _ type: EventType) -> String {
        EventLog.hookKey(clientId: clientId, type: type)
    }

    // MARK: Hooks

    /// A new hook, and the client's signing secret when this created it (the first hook; shown this once).
    public struct Created: Sendable {
        public var hook: Hook
        public var secret: Redacted<String>?
    }

    /// Creates the hook for `eventType` at `url` (ENABLED unless `status` says otherwise, VALID).
    /// - Throws: ``PaymentsError`` `.invalidParameters` naming `Url` (not https, private destination, unresolvable),
    ///   `EventType` (unknown, or a hook for it exists), `Status` or `Tag`.
    public func create(
        clientId: String, url: String?, eventType: String?, status: String?, tag: String?
    ) async throws -> Created {
        var problems: [String: String] = [:]
        let type = eventType.flatMap(EventType.init(rawValue:))
        if eventType == nil {
            problems["EventType"] = "The EventType field is required."
        } else if type == nil {
            problems["EventType"] = "The EventType is not a known event type."
        }
        let parsedStatus = try Self.status(status, &problems)
        if let tag, tag.utf8.count > 255 { problems["Tag"] = "The Tag must be at most 255 characters." }
        if let problem = await check(url: url) { problems["Url"] = problem }
        guard problems.isEmpty, let type, let url else { throw PaymentsError.invalid(problems) }
        let hook = Hook(
            id: Identifier.make("hook_", random: environment.random), clientId: clientId, eventType: type, url: url,
            status: parsedStatus ?? .enabled, validity: .valid, tag: tag, creationDate: now)
        var writes: [RecordWrite] = [
            .put(
                collection: Collections.hooks, id: Self.hookKey(clientId, hook.id),
                value: try RecordCoding.encode(hook), condition: .absent),
            .put(
                collection: Collections.hooksByEvent, id: Self.eventKey(clientId, type), value: Array(hook.id.utf8),
                condition: .absent),
        ]
        let existingSecret = try await store.get(Collections.hookSecrets, id: clientId)
        var secret: String?
        if existingSecret == nil {
            let made = Self.makeSecret(random: environment.random)
            secret = made
            writes.append(
                .put(
                    collection: Collections.hookSecrets, id: clientId,
                    value: try RecordCoding.encode(HookSecret(secret: made, creationDate: now)), condition: .absent))
        }
        do {
            try await store.commit(writes)
        } catch let error as StoreError where error.code == .conflict {
            if try await store.get(Collections.hooksByEvent, id: Self.eventKey(clientId, type)) != nil {
                throw PaymentsError.invalid("EventType", "A hook has already been registered for this EventType.")
            }
            throw PaymentsError(.concurrentChange, "The hooks changed under this request; nothing was written")
        } catch let error as StoreError where error.code == .unavailable {
            throw PaymentsError(.unavailable, "The store cannot write now")
        }
        environment.logger.info(
            "hook created",
            ["clientId": .string(clientId), "hookId": .string(hook.id), "eventType": .string(type.rawValue)])
        return Created(hook: hook, secret: secret.map { Redacted($0) })
    }

    /// Changes a hook's `Url`, `Status` or `Tag` (its event type and validity are not the merchant's to set).
    /// - Throws: ``PaymentsError`` `.notFound`, `.invalidParameters`.
    public func update(clientId: String, id: String, url: String?, status: String?, tag: String?) async throws -> Hook {
        var problems: [String: String] = [:]
        let parsedStatus = try Self.status(status, &problems)
        if let tag, tag.utf8.count > 255 { problems["Tag"] = "The Tag must be at most 255 characters." }
        if let url, let problem = await check(url: url) { problems["Url"] = problem }
        guard problems.isEmpty else { throw PaymentsError.invalid(problems) }
        return try await retryingOnConflict(
            attempts: 5,
            exhausted: PaymentsError(
                .concurrentChange, "The hook kept changing under this request; nothing was written")
        ) {
            guard let found = try await read(clientId: clientId, id: id) else {
                throw PaymentsError.notFound("Hook", id: id)
            }
            var hook = found.value
            if let url { hook.url = url }
            if let parsedStatus { hook.status = parsedStatus }
            if let tag { hook.tag = tag }
            guard hook != found.value else { return hook }
            try await store.commit([
                .put(
                    collection: Collections.hooks, id: Self.hookKey(clientId, id), value: try RecordCoding.encode(hook),
                    condition: .version(found.version))
            ])
            return hook
        }
    }

    /// The hook `id` of `clientId`. - Throws: ``PaymentsError`` `.notFound`.
    public func get(clientId: String, id: String) async throws -> Hook {
        guard let found = try await read(clientId: clientId, id: id) else {
            throw PaymentsError.notFound("Hook", id: id)
        }
        return found.value
    }

    /// Every hook of `clientId`, oldest first.
    public func all(clientId: String) async throws -> [Hook] {
        try await store.scanAll(Collections.hooks, prefix: clientId + ":").map {
            try RecordCoding.decode(Hook.self, from: $0)
        }
        .sorted { ($0.creationDate, $0.id) < ($1.creationDate, $1.id) }
    }

    /// Every hook of every client (the operator's list).
    public func allClients() async throws -> [Hook] {
        try await store.scanAll(Collections.hooks).map { try RecordCoding.decode(Hook.self, from: $0) }
    }

    /// The hook of `clientId` for `type`, if any.
    public func hook(clientId: String, type: EventType) async throws -> Stored<Hook>? {
        guard let entry = try await store.get(Collections.hooksByEvent, id: Self.eventKey(clientId, type)) else {
            return nil
        }
        return try await read(clientId: clientId, id: String(decoding: entry.value, as: UTF8.self))
    }

    func read(clientId: String, id: String) async throws -> Stored<Hook>? {
        guard Identifier.isWellFormed(clientId), Identifier.isWellFormed(id) else { return nil }
        return try await store.read(Hook.self, Collections.hooks, id: Self.hookKey(clientId, id))
    }

    private static func status(_ text: String?, _ problems: inout [String: String]) throws -> Hook.Status? {
        guard let text else { return nil }
        guard let status = Hook.Status(rawValue: text) else {
            problems["Status"] = "The Status must be ENABLED or DISABLED."
            return nil
        }
        return status
    }

    /// Why `url` cannot be a hook's destination, or nil: it must parse (https, or http when private destinations
    /// are allowed), and its host must resolve to addresses the policy allows (never a private one by default).
    func check(url: String?) async -> String? {
        guard let url else { return "The Url field is required." }
        let destination: DestinationURL
        do {
            destination = try policy.parse(url)
        } catch {
            return "The Url " + error.reason + "."
        }
        let addresses: [IPAddress]
        do {
            addresses = try await resolver.addresses(of: destination.bareHost)
        } catch {
            return "The Url's host cannot be resolved."
        }
        let addressPolicy = policy.addressPolicy
        guard !addresses.isEmpty, addresses.allSatisfy(addressPolicy.allows) else {
            return "The Url must not lead to a private, loopback, link-local or metadata address."
        }
        if destination.scheme == "http", !addresses.allSatisfy(AddressPolicy.isSpecial) {
            return "The Url must use https (http is only for private development receivers)."
        }
        return nil
    }

    // MARK: Secret

    /// The client's signing secret as stored.
    struct HookSecret: Codable {
        var secret: String
        var creationDate: Int64
    }

    static func makeSecret(random: any RandomSource) -> String {
        "whsec_" + Identifier.secret(count: 40, random: random)
    }

    /// The secret deliveries of `clientId` are signed with, if it has one.
    func secret(clientId: String) async throws -> String? {
        try await store.read(HookSecret.self, Collections.hookSecrets, id: clientId)?.value.secret
    }

    /// Replaces the client's signing secret by a new one (returned this once); deliveries from now on use it.
    public func rotateSecret(clientId: String) async throws -> Redacted<String> {
        let secret = Self.makeSecret(random: environment.random)
        try await store.commit([
            .put(
                collection: Collections.hookSecrets, id: clientId,
                value: try RecordCoding.encode(HookSecret(secret: secret, creationDate: now)), condition: .unconditional
            )
        ])
        environment.logger.notice("hook secret rotated", ["clientId": .string(clientId)])
        return Redacted(secret)
    }

    // MARK: Events

    /// How `GET /events` sorts.
    public enum EventOrder: Sendable {
        case oldestFirst, newestFirst
    }

    /// The events of `clientId`, filtered by type and by `Date` (strictly after `afterDate`, strictly before
    /// `beforeDate`), a page at a time.
    public func events(
        clientId: String, type: EventType?, afterDate: Int64?, beforeDate: Int64?, page: Int, perPage: Int,
        order: EventOrder
    ) async throws -> Page<PaymentEvent> {
        let prefix = EventLog.idPrefix(clientId: clientId)
        var after: String?
        if let afterDate, afterDate < Int64.max / 1_000_000 - 1 {
            // Ids hold microseconds: everything up to the end of second `afterDate` is skipped.
            after = EventLog.idPosition(clientId: clientId, micros: (afterDate + 1) * 1_000_000 - 1) + "~"
        }
        var items: [PaymentEvent] = []
        while true {
            let batch = try await store.scan(Collections.events, prefix: prefix, after: after, limit: 1000)
            for record in batch {
                let event = try RecordCoding.decode(PaymentEvent.self, from: record)
                if let beforeDate, event.date >= beforeDate { continue }
                if let afterDate, event.date <= afterDate { continue }
                if let type, event.eventType != type { continue }
                items.append(event)
            }
            guard batch.count == 1000, let last = batch.last else { break }
            if let beforeDate, let event = try? RecordCoding.decode(PaymentEvent.self, from: last),
                event.date >= beforeDate
            {
                break
            }
            after = last.id
        }
        if order == .newestFirst { items.reverse() }
        let start = (page - 1) * perPage
        let slice = start < items.count ? Array(items[start..<min(items.count, start + perPage)]) : []
        return Page(items: slice, totalItems: items.count, totalPages: (items.count + perPage - 1) / perPage)
    }

    // MARK: Operator

    /// Deliveries given up, of one client or all, oldest first.
    public func failures(clientId: String? = nil) async throws -> [HookDeliveryState] {
        try await store.scanAll(Collections.hookFailures, prefix: clientId.map { $0 + ":" } ?? "").map {
            try RecordCoding.decode(HookDeliveryState.self, from: $0)
        }
    }

    /// Events waiting in the outbox, of one client or all.
    public func pending(clientId: String? = nil) async throws -> [HookDeliveryState] {
        try await store.scanAll(Collections.eventOutbox, prefix: clientId.map { $0 + ":" } ?? "").map {
            try RecordCoding.decode(HookDeliveryState.self, from: $0)
        }
    }

    /// Puts every given-up delivery (of one client or all) back in the outbox from the start of the schedule, and
    /// makes their clients' INVALID hooks VALID again. - Returns: how many events were queued again.
    @discardableResult
    public func retryFailures(clientId: String? = nil) async throws -> Int {
        let failed = try await store.scanAll(Collections.hookFailures, prefix: clientId.map { $0 + ":" } ?? "")
        var clients = Set<String>()
        for record in failed {
            let state = try RecordCoding.decode(HookDeliveryState.self, from: record)
            clients.insert(state.clientId)
            try await store.commit([
                .delete(collection: Collections.hookFailures, id: record.id, condition: .version(record.version)),
                .put(
                    collection: Collections.eventOutbox, id: record.id, value: try RecordCoding.encode(state.fresh),
                    condition: .unconditional),
            ])
        }
        if let clientId { clients.insert(clientId) }
        for client in clients { try await revalidate(clientId: client) }
        return failed.count
    }

    /// Makes every INVALID hook of `clientId` VALID again.
    func revalidate(clientId: String) async throws {
        for record in try await store.scanAll(Collections.hooks, prefix: clientId + ":") {
            var hook = try RecordCoding.decode(Hook.self, from: record)
            guard hook.validity == .invalid else { continue }
            hook.validity = .valid
            _ = try? await store.commit([
                .put(
                    collection: Collections.hooks, id: record.id, value: try RecordCoding.encode(hook),
                    condition: .version(record.version))
            ])
        }
    }

    /// Queues again every event of `clientId` dated at or after `fromDate` (Unix seconds), for the hooks that
    /// exist now. - Returns: how many events were queued.
    @discardableResult
    public func replay(clientId: String, fromDate: Int64) async throws -> Int {
        var count = 0
        let after =
            fromDate > 0 && fromDate < Int64.max / 1_000_000
            ? EventLog.idPosition(clientId: clientId, micros: fromDate * 1_000_000 - 1) + "~" : nil
        var position = after
        while true {
            let batch = try await store.scan(
                Collections.events, prefix: EventLog.idPrefix(clientId: clientId), after: position, limit: 500)
            for record in batch {
                let event = try RecordCoding.decode(PaymentEvent.self, from: record)
                guard event.date >= fromDate else { continue }
                try await store.commit([
                    .put(
                        collection: Collections.eventOutbox, id: record.id,
                        value: try RecordCoding.encode(HookDeliveryState(event: event)), condition: .unconditional)
                ])
                count += 1
            }
            guard batch.count == 500, let last = batch.last else { break }
            position = last.id
        }
        try await revalidate(clientId: clientId)
        return count
    }
}

extension HookService {
    /// The lifetimes of the hooks' collections, for the record sweeper.
    public static var recordLifetimes: [RecordLifetime] {
        [
            RecordLifetime(kept: Collections.hooks, "until the merchant's data is removed"),
            RecordLifetime(kept: Collections.hooksByEvent, "with its hook"),
            RecordLifetime(kept: Collections.hookSecrets, "until rotated (the new secret replaces it)"),
            .deleted(Collections.hookFailures, "400 days after delivery was given up (the events' retention)") {
                record in
                let state = try RecordCoding.decode(HookDeliveryState.self, from: record)
                return (state.givenUpAt ?? state.date) + 400 * 86_400
            }.sweptEvery(RecordLifetime.longLivedSweepSeconds),
        ]
    }
}
