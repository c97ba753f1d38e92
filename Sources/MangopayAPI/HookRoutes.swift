public import HTTPServer
public import Hooks
public import Payments
import VaultCore

/// Hooks and events in the Mangopay dialect:
/// - `POST /v2.01/{ClientId}/hooks` `{"Url","EventType","Status"?,"Tag"?}`, `PUT /hooks/{id}` (`Url`, `Status`,
///   `Tag`), `GET /hooks/{id}`, `GET /hooks` (a page); the client's first hook answers its signing secret once
///   (`Secret`), `POST /hooks/secret` rotates it;
/// - `GET /v2.01/{ClientId}/events` with `EventType`, `BeforeDate`, `AfterDate`, `page`, `per_page` and
///   `Sort=Date:ASC|DESC`.
public struct HookRoutes: RouteGroup {
    public let hooks: HookService
    public let services: MerchantServices

    public init(hooks: HookService, services: MerchantServices) {
        self.hooks = hooks
        self.services = services
    }

    public func register(on router: inout Router) {
        let api = MangopayHandlers(services: services, checkoutOrigins: [])
        let hooks = hooks
        let base = "/v2.01/:clientId"
        // Not idempotent-replayable: the first hook's answer carries the secret, which must not be kept in the
        // idempotency ledger for `GET /responses` to show again.
        router.post(base + "/hooks") { request in
            await api.authorized(request) { clientId in
                var body = try MangopayFields(body: request.body)
                let url = body.string("Url")
                let eventType = body.string("EventType")
                let status = body.string("Status")
                let tag = body.string("Tag")
                try body.check()
                let created = try await hooks.create(
                    clientId: clientId, url: url, eventType: eventType, status: status, tag: tag)
                var members = Self.members(created.hook)
                if let secret = created.secret { members.append(("Secret", .string(secret.unsafeRevealed))) }
                var response = MangopayResponse.json(.object(members))
                response.headers.set("Cache-Control", "no-store")
                return response
            }
        }
        router.post(base + "/hooks/secret") { request in
            await api.authorized(request) { clientId in
                let secret = try await hooks.rotateSecret(clientId: clientId)
                var response = MangopayResponse.json(.object([("Secret", .string(secret.unsafeRevealed))]))
                response.headers.set("Cache-Control", "no-store")
                return response
            }
        }
        router.put(base + "/hooks/:id") { request in
            await api.authorized(request) { clientId in
                var body = try MangopayFields(body: request.body)
                let url = body.string("Url")
                let status = body.string("Status")
                let tag = body.string("Tag")
                try body.check()
                let hook = try await hooks.update(
                    clientId: clientId, id: request.parameters["id"] ?? "", url: url, status: status, tag: tag)
                return MangopayResponse.json(.object(Self.members(hook)))
            }
        }
        router.get(base + "/hooks/:id") { request in
            await api.authorized(request) { clientId in
                MangopayResponse.json(
                    .object(Self.members(try await hooks.get(clientId: clientId, id: request.parameters["id"] ?? ""))))
            }
        }
        router.get(base + "/hooks") { request in
            await api.authorized(request) { clientId in
                let page = try PageRequest(request)
                var all = try await hooks.all(clientId: clientId)
                if page.newestFirst { all.reverse() }
                let start = (page.page - 1) * page.perPage
                let items = start < all.count ? Array(all[start..<min(all.count, start + page.perPage)]) : []
                return MangopayResponse.list(
                    Page(items: items, totalItems: all.count, totalPages: (all.count + page.perPage - 1) / page.perPage)
                ) { .object(Self.members($0)) }
            }
        }
        router.get(base + "/events") { request in
            await api.authorized(request) { clientId in try await Self.events(request, clientId: clientId, hooks: hooks)
            }
        }
    }

    static func members(_ hook: Hook) -> [(String, MangopayJSON)] {
        [
            ("Id", .string(hook.id)), ("Url", .string(hook.url)), ("Status", .string(hook.status.rawValue)),
            ("Validity", .string(hook.validity.rawValue)), ("EventType", .string(hook.eventType.rawValue)),
            ("Tag", MangopayJSON.text(hook.tag)), ("CreationDate", .int(hook.creationDate)),
        ]
    }

    static func events(_ request: Request, clientId: String, hooks: HookService) async throws -> Response {
        let query: FormFields
        do {
            query = try request.query()
        } catch {
            throw PaymentsError.invalid("Query", "The query string is malformed.")
        }
        var problems: [String: String] = [:]
        let page = try PageRequest(page: query["page"], perPage: query["per_page"], sort: nil)
        var type: EventType?
        if let text = query["EventType"], !text.isEmpty {
            type = EventType(rawValue: text)
            if type == nil { problems["EventType"] = "The EventType is not a known event type." }
        }
        func date(_ name: String) -> Int64? {
            guard let text = query[name], !text.isEmpty else { return nil }
            guard let value = Int64(text), value >= 0 else {
                problems[name] = "The \(name) must be a date in Unix seconds."
                return nil
            }
            return value
        }
        let after = date("AfterDate")
        let before = date("BeforeDate")
        var order = HookService.EventOrder.oldestFirst
        if let sort = query["Sort"] ?? query["sort"] {
            switch sort.lowercased() {
            case "date:asc", "creationdate:asc": order = .oldestFirst
            case "date:desc", "creationdate:desc": order = .newestFirst
            default: problems["Sort"] = "The Sort must be Date:ASC or Date:DESC."
            }
        }
        if !problems.isEmpty { throw PaymentsError.invalid(problems) }
        let events = try await hooks.events(
            clientId: clientId, type: type, afterDate: after, beforeDate: before, page: page.page,
            perPage: page.perPage, order: order)
        return MangopayResponse.list(events) { event in
            .object([
                ("ResourceId", .string(event.resourceId)), ("EventType", .string(event.eventType.rawValue)),
                ("Date", .int(event.date)),
            ])
        }
    }
}
