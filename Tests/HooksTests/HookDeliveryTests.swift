import CardVaultTesting
import Foundation
import OutboundHTTP
import Testing
import VaultCore
import VaultCrypto
import VaultStore

@testable import Hooks
@testable import Payments

/// A resolver with fixed answers: `receiver.example` is public, `internal.example` private.
struct FixedResolver: HostResolving {
    func addresses(of host: String) async throws(OutboundHTTPError) -> [IPAddress] {
        if let literal = IPAddress(host) { return [literal] }
        switch host {
        case "receiver.example", "other.example": return [IPAddress("93.184.216.34")!]
        case "internal.example": return [IPAddress("10.0.0.7")!]
        default: throw OutboundHTTPError(.unresolvable, "unknown host")
        }
    }
}

/// A receiver the engine talks to in process: answers from a script (then `fallback`), records each call with the
/// clock's time, and can hold calls to measure concurrency.
final class ScriptedTransport: HookTransport, Sendable {
    struct Call: Sendable {
        var url: String
        var query: String
        var signature: String
        var at: Int64
    }

    private struct State {
        var script: [HookAttemptResult] = []
        /// Answers for calls whose URL contains the key, before the general script.
        var scripted: [String: [HookAttemptResult]] = [:]
        var calls: [Call] = []
        var inFlight: [String: Int] = [:]
        var maxInFlight: [String: Int] = [:]
    }

    private let state = Locked(State())
    let clock: ManualClock
    let fallback: HookAttemptResult
    let delay: Duration?

    init(clock: ManualClock, fallback: HookAttemptResult = .delivered, delay: Duration? = nil) {
        self.clock = clock
        self.fallback = fallback
        self.delay = delay
    }

    func answer(_ results: [HookAttemptResult]) { state.withLock { $0.script += results } }
    func answer(_ results: [HookAttemptResult], whenURLContains key: String) {
        state.withLock { $0.scripted[key, default: []] += results }
    }
    var calls: [Call] { state.withLock { $0.calls } }
    func maxInFlight(_ host: String) -> Int { state.withLock { $0.maxInFlight[host] ?? 0 } }

    func get(_ url: DestinationURL, signature: String) async -> HookAttemptResult {
        let result = state.withLock { state -> HookAttemptResult in
            state.calls.append(
                Call(
                    url: url.description, query: url.query ?? "", signature: signature,
                    at: Int64(clock.now.timeIntervalSince1970)))
            state.inFlight[url.host, default: 0] += 1
            state.maxInFlight[url.host] = max(state.maxInFlight[url.host] ?? 0, state.inFlight[url.host]!)
            if let key = state.scripted.keys.first(where: {
                url.description.contains($0) && !state.scripted[$0]!.isEmpty
            }) {
                return state.scripted[key]!.removeFirst()
            }
            return state.script.isEmpty ? fallback : state.script.removeFirst()
        }
        if let delay { try? await Task.sleep(for: delay) }
        state.withLock { $0.inFlight[url.host, default: 0] -= 1 }
        return result
    }
}

/// A store that counts the commits that delete outbox entries, over an in-memory store.
final class OutboxCommitCountingStore: RecordStore {
    let inner = InMemoryRecordStore()
    private let deletions = Locked([Int]())

    /// The number of outbox deletes of each commit that had any, in order.
    var outboxDeleteCommits: [Int] { deletions.withLock { $0 } }

    func get(_ collection: String, id: String) async throws -> Record? { try await inner.get(collection, id: id) }

    func commit(_ writes: [RecordWrite]) async throws -> [UInt64] {
        let deletes = writes.filter {
            if case .delete(Collections.eventOutbox, _, _) = $0 { return true }
            return false
        }.count
        if deletes > 0 { deletions.withLock { $0.append(deletes) } }
        return try await inner.commit(writes)
    }

    func scan(_ collection: String, prefix: String, after: String?, limit: Int) async throws -> [Record] {
        try await inner.scan(collection, prefix: prefix, after: after, limit: limit)
    }
}

struct HookHarness {
    let store: any RecordStore
    let clock = ManualClock()
    let environment: PaymentsEnvironment
    let hooks: HookService
    let transport: ScriptedTransport
    let engine: HookDeliveryEngine

    init(
        retryInterval: Int64 = 600, fallback: HookAttemptResult = .delivered, delay: Duration? = nil,
        perDestination: Int = 4, allowPrivate: Bool = false, batchSize: Int = 500,
        store: any RecordStore = InMemoryRecordStore()
    ) {
        self.store = store
        environment = PaymentsEnvironment.testing(store: store, clock: clock)
        hooks = HookService(
            environment: environment, policy: HookDestinationPolicy(allowPrivateAddresses: allowPrivate),
            resolver: FixedResolver())
        transport = ScriptedTransport(clock: clock, fallback: fallback, delay: delay)
        engine = HookDeliveryEngine(
            hooks: hooks, transport: transport, schedule: HookSchedule(retryInterval: retryInterval),
            maxConcurrentPerDestination: perDestination, batchSize: batchSize)
    }

    var now: Int64 { Int64(clock.now.timeIntervalSince1970) }

    /// An event committed as a change would commit it: queued for delivery when the client has a hook for its type
    /// (`queued` nil), or queued (true) or not (false) whatever the hooks, as when a hook came or went after.
    @discardableResult
    func event(
        _ type: EventType, _ resourceId: String, clientId: String = "shop", queued: Bool? = nil
    ) async throws -> PaymentEvent {
        let writes =
            if let queued {
                try EventLog.writes(
                    clientId: clientId, type: type, resourceId: resourceId, clock: environment.clock,
                    random: environment.random, stamps: environment.eventStamps, queued: queued)
            } else {
                try await EventLog.writes(type, resourceId: resourceId, clientId: clientId, environment: environment)
            }
        try await store.commit(writes)
        clock.advance(by: 0.001)
        return try RecordCoding.decode(
            PaymentEvent.self, from: try #require(try await store.get(Collections.events, id: writes[0].id)))
    }

    func outbox() async throws -> [HookDeliveryState] { try await hooks.pending() }
}

@Suite struct HookScheduleTests {
    @Test func theDefaultScheduleIsEveryTenMinutesForAnHourThenEveryEightHoursForThreeDays() {
        let schedule = HookSchedule()
        let offsets = (1...20).compactMap { schedule.offset(ofRetry: Int64($0)) }
        let fast: [Int64] = [600, 1200, 1800, 2400, 3000, 3600]
        let slow: [Int64] = (1...9).map { (k: Int64) -> Int64 in 3600 + k * 28_800 }
        #expect(offsets == fast + slow)
        #expect(schedule.attempts == 16)
        #expect(schedule.offset(ofRetry: 16) == nil)
        // Late (the daemon was down): the next attempt is now, not in the past.
        #expect(schedule.nextAttempt(afterFailures: 1, firstAttempt: 1000, now: 5000) == 5000)
        #expect(schedule.nextAttempt(afterFailures: 1, firstAttempt: 1000, now: 1001) == 1600)
        #expect(HookSchedule(retryInterval: 1).offset(ofRetry: 3600) == 3600)
        let firstSlow = HookSchedule(retryInterval: 1).offset(ofRetry: 3601)
        #expect(firstSlow == Int64(32_400))
    }
}

@Suite struct HookDeliveryTests {
    @Test func aDueEventIsDeliveredOnceSignedAndLeavesTheOutbox() async throws {
        let h = HookHarness()
        let created = try await h.hooks.create(
            clientId: "shop", url: "https://receiver.example/hook?shop=1", eventType: "PAYIN_NORMAL_SUCCEEDED",
            status: nil, tag: nil)
        let secret = try #require(created.secret).unsafeRevealed
        let event = try await h.event(.payInNormalSucceeded, "payin_1")
        let report = try await h.engine.round()
        #expect(report.delivered == 1)
        let call = try #require(h.transport.calls.first)
        #expect(
            call.url
                == "https://receiver.example/hook?shop=1&EventType=PAYIN_NORMAL_SUCCEEDED&RessourceId=payin_1&Date=\(event.date)"
        )
        #expect(call.query == "shop=1&EventType=PAYIN_NORMAL_SUCCEEDED&RessourceId=payin_1&Date=\(event.date)")
        #expect(Receiver.accepts(call.signature, query: call.query, secret: secret, now: h.now))
        #expect(try await h.outbox().isEmpty)
        #expect(try await h.engine.round().delivered == 0)
        #expect(h.transport.calls.count == 1)
        #expect(h.engine.metrics.delivered == 1)
    }

    /// The receiver's side, written from the documentation only (not with HookSignature): parse
    /// `t=…,v1=…`, refuse an old `t`, recompute HMAC-SHA256 of "<t>.<query>" under the secret, compare.
    enum Receiver {
        static func accepts(_ header: String, query: String, secret: String, now: Int64) -> Bool {
            var fields: [String: String] = [:]
            for part in header.split(separator: ",") {
                let pair = part.split(separator: "=", maxSplits: 1)
                if pair.count == 2 { fields[String(pair[0])] = String(pair[1]) }
            }
            guard let t = fields["t"].flatMap({ Int64($0) }), let v1 = fields["v1"], abs(now - t) <= 300 else {
                return false
            }
            let mac = HMACSHA256.authenticationCode(
                for: Array("\(t).\(query)".utf8), using: SymmetricKey(copying: Array(secret.utf8)))
            let hex = mac.map { String(format: "%02x", $0) }.joined()
            return ConstantTime.equals(Array(hex.utf8), Array(v1.utf8))
        }
    }

    @Test func aReceiverRejectsForgedAlteredAndReplayedDeliveries() async throws {
        let query = "EventType=PAYIN_NORMAL_SUCCEEDED&RessourceId=payin_1&Date=1767225600"
        let header = HookSignature.header(query: query, timestamp: 1_767_225_600, secret: "whsec_right")
        #expect(Receiver.accepts(header, query: query, secret: "whsec_right", now: 1_767_225_610))
        #expect(HookSignature.verify(header: header, query: query, secret: "whsec_right", now: 1_767_225_610))
        #expect(!Receiver.accepts(header, query: query, secret: "whsec_wrong", now: 1_767_225_610))
        #expect(
            !Receiver.accepts(
                header, query: query.replacing("payin_1", with: "payin_2"), secret: "whsec_right", now: 1_767_225_610))
        #expect(!Receiver.accepts(header, query: query, secret: "whsec_right", now: 1_767_225_600 + 301))
        #expect(!HookSignature.verify(header: header, query: query, secret: "whsec_right", now: 1_767_225_600 + 301))
        #expect(!HookSignature.verify(header: "t=1767225600", query: query, secret: "whsec_right", now: 1_767_225_600))
        let forged = "t=1767225600,v1=" + String(repeating: "0", count: 64)
        #expect(!HookSignature.verify(header: forged, query: query, secret: "whsec_right", now: 1_767_225_600))
    }

    @Test func theWholeRetryScheduleRunsOnTheClockThenTheHookBecomesInvalidAndTheEventIsKept() async throws {
        let h = HookHarness(fallback: .failed(reason: "status 500"))
        _ = try await h.hooks.create(
            clientId: "shop", url: "https://receiver.example/hook", eventType: "PAYIN_NORMAL_SUCCEEDED", status: nil,
            tag: nil)
        try await h.event(.payInNormalSucceeded, "payin_1")
        let start = h.now
        // Step through 4 days in 5-minute steps: each round attempts only what is due.
        for _ in 0..<(4 * 288) {
            try await h.engine.round()
            h.clock.advance(by: 300)
        }
        let attempts = h.transport.calls.map { $0.at - start }
        let expected: [Int64] = [0] + (1...15).map { HookSchedule().offset(ofRetry: Int64($0))! }
        #expect(attempts == expected)
        #expect(try await h.outbox().isEmpty)
        let failures = try await h.hooks.failures(clientId: "shop")
        #expect(failures.count == 1)
        #expect(failures.first?.resourceId == "payin_1" && failures.first?.failures == 16)
        #expect(failures.first?.lastFailure == "status 500")
        #expect(try await h.hooks.hook(clientId: "shop", type: .payInNormalSucceeded)?.value.validity == .invalid)

        // An INVALID hook gets no delivery: later events are kept for the operator at once.
        try await h.event(.payInNormalSucceeded, "payin_2")
        try await h.engine.round()
        #expect(h.transport.calls.count == 16)
        #expect(try await h.hooks.failures(clientId: "shop").count == 2)

        // The operator's retry queues both again and makes the hook VALID; a healthy receiver gets both.
        let healthy = HookEngineWithTransport(h, ScriptedTransport(clock: h.clock))
        #expect(try await h.hooks.retryFailures(clientId: "shop") == 2)
        #expect(try await h.hooks.hook(clientId: "shop", type: .payInNormalSucceeded)?.value.validity == .valid)
        #expect(try await healthy.engine.round().delivered == 2)
        #expect(Set(healthy.transport.calls.map { $0.query.contains("payin_1") }) == [true, false])
        #expect(try await h.hooks.failures().isEmpty)
    }

    @Test func aResourcesLaterEventWaitsForItsEarlierOne() async throws {
        let h = HookHarness(retryInterval: 60)
        for type in ["PAYIN_NORMAL_CREATED", "PAYIN_NORMAL_SUCCEEDED"] {
            _ = try await h.hooks.create(
                clientId: "shop", url: "https://receiver.example/" + type, eventType: type, status: nil, tag: nil)
        }
        try await h.event(.payInNormalCreated, "payin_1")
        try await h.event(.payInNormalSucceeded, "payin_1")
        try await h.event(.payInNormalSucceeded, "payin_2")
        h.transport.answer([.failed(reason: "timeout")], whenURLContains: "PAYIN_NORMAL_CREATED?")
        let first = try await h.engine.round()
        // payin_1's CREATED failed, so its SUCCEEDED waited; payin_2 went through.
        #expect(first.failed == 1 && first.delivered == 1)
        #expect(h.transport.calls.count == 2)
        #expect(try await h.outbox().map(\.eventType) == [.payInNormalCreated, .payInNormalSucceeded])
        #expect(try await h.engine.round().delivered == 0)  // not due yet
        h.clock.advance(by: 60)
        #expect(try await h.engine.round().delivered == 2)
        let order = h.transport.calls.suffix(2).map { $0.url.contains("PAYIN_NORMAL_CREATED?") }
        #expect(order == [true, false])
        #expect(try await h.outbox().isEmpty)
    }

    @Test func aBacklogForADeadReceiverDoesNotHoldBackLaterEventsOrOrder() async throws {
        let h = HookHarness(batchSize: 2)
        _ = try await h.hooks.create(
            clientId: "shop", url: "https://receiver.example/hook",
            eventType: "PAYIN_NORMAL_FAILED", status: nil, tag: nil)
        _ = try await h.hooks.create(
            clientId: "shop", url: "https://other.example/hook", eventType: "PAYIN_NORMAL_SUCCEEDED", status: nil,
            tag: nil)
        for index in 0..<5 { try await h.event(.payInNormalFailed, "payin_dead\(index)") }
        h.transport.answer(Array(repeating: .failed(reason: "timeout"), count: 5))
        #expect(try await h.engine.round().failed == 5)
        // Across pages: payin_dead0's later event still waits behind its failed one.
        try await h.event(.payInNormalFailed, "payin_dead0")
        try await h.event(.payInNormalSucceeded, "payin_live")
        let report = try await h.engine.round()
        #expect(report.delivered == 1 && report.failed == 0)
        #expect(h.transport.calls.last?.query.contains("payin_live") == true)
        #expect(try await h.outbox().count == 6)
    }

    @Test func onlyEventsOfATypeWithAHookAreQueued() async throws {
        let h = HookHarness()
        try await h.event(.payInNormalSucceeded, "payin_before")
        #expect(try await h.outbox().isEmpty)
        _ = try await h.hooks.create(
            clientId: "shop", url: "https://receiver.example/hook", eventType: "PAYIN_NORMAL_SUCCEEDED", status: nil,
            tag: nil)
        try await h.event(.payInNormalSucceeded, "payin_after")
        try await h.event(.payInNormalFailed, "payin_other_type")
        try await h.event(.payInNormalSucceeded, "payin_other_client", clientId: "other")
        #expect(try await h.outbox().map(\.resourceId) == ["payin_after"])
        let report = try await h.engine.round()
        #expect(report.delivered == 1 && report.dropped == 0)
        #expect(h.transport.calls.map { $0.query.contains("payin_after") } == [true])
        // Every event is listed all the same.
        let page = try await h.hooks.events(
            clientId: "shop", type: nil, afterDate: nil, beforeDate: nil, page: 1, perPage: 10, order: .newestFirst)
        #expect(page.items.count == 3)
    }

    @Test func eventsWithoutAnEnabledHookLeaveTheOutboxUndelivered() async throws {
        let h = HookHarness()
        let created = try await h.hooks.create(
            clientId: "shop", url: "https://receiver.example/hook", eventType: "PAYIN_NORMAL_SUCCEEDED",
            status: "DISABLED", tag: nil)
        #expect(created.hook.status == .disabled)
        try await h.event(.payInNormalSucceeded, "payin_1")
        try await h.event(.userNaturalCreated, "user_1", queued: true)  // its hook was removed since
        #expect(try await h.engine.round().dropped == 2)
        let left = try await h.outbox()
        #expect(h.transport.calls.isEmpty && left.isEmpty)
        // The events themselves stay listed.
        let page = try await h.hooks.events(
            clientId: "shop", type: nil, afterDate: nil, beforeDate: nil, page: 1, perPage: 10, order: .newestFirst)
        #expect(page.items.map(\.eventType) == [.userNaturalCreated, .payInNormalSucceeded])
    }

    @Test func eventsWithoutAnEnabledHookLeaveInOneCommitPerPage() async throws {
        let store = OutboxCommitCountingStore()
        let h = HookHarness(batchSize: 4, store: store)
        for index in 0..<6 { try await h.event(.payInNormalSucceeded, "payin_\(index)", queued: true) }
        try await h.event(.userNaturalCreated, "user_1", queued: true)
        let report = try await h.engine.round()
        #expect(report.dropped == 7 && report.delivered == 0)
        #expect(store.outboxDeleteCommits == [4, 3])
        #expect(try await h.outbox().isEmpty && h.transport.calls.isEmpty)
    }

    @Test func anEventWithoutAHookLeavesBeforeTheResourcesLaterEventIsDelivered() async throws {
        let store = OutboxCommitCountingStore()
        let h = HookHarness(store: store)
        _ = try await h.hooks.create(
            clientId: "shop", url: "https://receiver.example/hook", eventType: "PAYIN_NORMAL_SUCCEEDED", status: nil,
            tag: nil)
        try await h.event(.payInNormalCreated, "payin_1", queued: true)
        try await h.event(.payInNormalSucceeded, "payin_1")
        try await h.event(.payInNormalCreated, "payin_2", queued: true)
        h.transport.answer([.failed(reason: "timeout")])
        let report = try await h.engine.round()
        #expect(report.dropped == 2 && report.failed == 1)
        // payin_1's CREATED left in a commit of its own before its SUCCEEDED was attempted; payin_2's at the end.
        #expect(store.outboxDeleteCommits == [1, 1])
        #expect(try await h.outbox().map(\.eventType) == [.payInNormalSucceeded])
    }

    @Test func concurrencyIsBoundedPerDestination() async throws {
        let h = HookHarness(delay: .milliseconds(20), perDestination: 2)
        _ = try await h.hooks.create(
            clientId: "shop", url: "https://receiver.example/hook", eventType: "PAYIN_NORMAL_SUCCEEDED", status: nil,
            tag: nil)
        _ = try await h.hooks.create(
            clientId: "shop", url: "https://other.example/hook", eventType: "PAYIN_NORMAL_FAILED", status: nil,
            tag: nil)
        for index in 0..<10 {
            try await h.event(.payInNormalSucceeded, "payin_s\(index)")
            try await h.event(.payInNormalFailed, "payin_f\(index)")
        }
        #expect(try await h.engine.round().delivered == 20)
        #expect(h.transport.maxInFlight("receiver.example") == 2)
        #expect(h.transport.maxInFlight("other.example") == 2)
    }

    @Test func hookURLsMustBeHTTPSAndPublicUnlessPrivateAddressesAreAllowed() async throws {
        let h = HookHarness()
        for url in [
            "http://receiver.example/hook", "https://127.0.0.1/hook", "https://internal.example/hook",
            "https://169.254.169.254/latest", "https://[::1]/hook", "ftp://receiver.example/",
            "https://nowhere.example/",
        ] {
            await #expect {
                _ = try await h.hooks.create(
                    clientId: "shop", url: url, eventType: "PAYIN_NORMAL_SUCCEEDED", status: nil, tag: nil)
            } throws: { error in
                (error as? PaymentsError)?.fieldErrors["Url"] != nil
            }
        }
        let development = HookHarness(allowPrivate: true)
        let created = try await development.hooks.create(
            clientId: "shop", url: "http://127.0.0.1:8081/hook", eventType: "PAYIN_NORMAL_SUCCEEDED", status: nil,
            tag: nil)
        #expect(created.hook.url == "http://127.0.0.1:8081/hook")
        // Plain http is still refused to a public address.
        await #expect(throws: PaymentsError.self) {
            _ = try await development.hooks.create(
                clientId: "shop", url: "http://receiver.example/hook", eventType: "PAYIN_NORMAL_FAILED", status: nil,
                tag: nil)
        }
        // One hook per event type, and the secret only with the first.
        await #expect {
            _ = try await development.hooks.create(
                clientId: "shop", url: "http://127.0.0.1:8081/again", eventType: "PAYIN_NORMAL_SUCCEEDED",
                status: nil, tag: nil)
        } throws: { error in
            (error as? PaymentsError)?.fieldErrors["EventType"] != nil
        }
        let second = try await development.hooks.create(
            clientId: "shop", url: "http://127.0.0.1:8081/created", eventType: "PAYIN_NORMAL_CREATED", status: nil,
            tag: nil)
        #expect(created.secret != nil && second.secret == nil)
    }

    @Test func aRotatedSecretSignsTheNextDeliveries() async throws {
        let h = HookHarness()
        let created = try await h.hooks.create(
            clientId: "shop", url: "https://receiver.example/hook", eventType: "PAYIN_NORMAL_SUCCEEDED", status: nil,
            tag: nil)
        let old = try #require(created.secret).unsafeRevealed
        let new = try await h.hooks.rotateSecret(clientId: "shop").unsafeRevealed
        #expect(old != new && new.hasPrefix("whsec_"))
        try await h.event(.payInNormalSucceeded, "payin_1")
        try await h.engine.round()
        let call = try #require(h.transport.calls.first)
        #expect(Receiver.accepts(call.signature, query: call.query, secret: new, now: h.now))
        #expect(!Receiver.accepts(call.signature, query: call.query, secret: old, now: h.now))
    }

    @Test func replayQueuesEventsFromADateAgain() async throws {
        let h = HookHarness()
        _ = try await h.hooks.create(
            clientId: "shop", url: "https://receiver.example/hook", eventType: "PAYIN_NORMAL_SUCCEEDED", status: nil,
            tag: nil)
        try await h.event(.payInNormalSucceeded, "payin_old")
        h.clock.advance(by: 100)
        let cut = h.now
        try await h.event(.payInNormalSucceeded, "payin_new")
        #expect(try await h.engine.round().delivered == 2)
        #expect(try await h.hooks.replay(clientId: "shop", fromDate: cut) == 1)
        #expect(try await h.engine.round().delivered == 1)
        #expect(h.transport.calls.last?.query.contains("payin_new") == true)
    }
}

/// The same hooks and store with another receiver.
struct HookEngineWithTransport {
    let engine: HookDeliveryEngine
    let transport: ScriptedTransport

    init(_ h: HookHarness, _ transport: ScriptedTransport) {
        self.transport = transport
        engine = HookDeliveryEngine(hooks: h.hooks, transport: transport)
    }
}
