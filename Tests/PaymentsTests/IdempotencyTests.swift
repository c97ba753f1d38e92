import Foundation
import Testing
import VaultCore

@testable import Payments

@Suite struct IdempotencyTests {
    let key = "5a0f6b1c-2d3e-4f50-8a9b-0c1d2e3f4a5b"

    @Test func sameRequestReplaysAndOtherRequestConflicts() async throws {
        let fixture = PaymentsFixture()
        let ledger = fixture.services.idempotency
        let body = Array(#"{"Currency":"EUR"}"#.utf8)
        #expect(
            try await ledger.begin(clientId: "shop", key: key, method: "POST", path: "/v2.01/shop/wallets", body: body)
                == .proceed)
        // While the first runs, a second with the same key is a conflict.
        let running = await PaymentsError.from {
            try await ledger.begin(clientId: "shop", key: key, method: "POST", path: "/v2.01/shop/wallets", body: body)
        }
        #expect(running?.code == .idempotencyConflict)
        let stored = StoredResponse(
            statusCode: 200, contentType: "application/json", body: Array(#"{"Id":"w"}"#.utf8),
            requestURL: "/v2.01/shop/wallets", date: 1)
        try await ledger.record(clientId: "shop", key: key, response: stored)
        #expect(
            try await ledger.begin(clientId: "shop", key: key, method: "POST", path: "/v2.01/shop/wallets", body: body)
                == .replay(stored))
        let otherBody = await PaymentsError.from {
            try await ledger.begin(clientId: "shop", key: key, method: "POST", path: "/v2.01/shop/wallets", body: [])
        }
        #expect(otherBody?.code == .idempotencyConflict)
        #expect(try await ledger.response(clientId: "shop", key: key) == stored)
        // Keys are per client.
        #expect(try await ledger.begin(clientId: "other", key: key, method: "POST", path: "/x", body: []) == .proceed)
        // After 24 hours the key is free again.
        fixture.clock.advance(by: 24 * 3600)
        let gone = await PaymentsError.from { try await ledger.response(clientId: "shop", key: key) }
        #expect(gone?.code == .correlationIdNotFound)
        #expect(try await ledger.begin(clientId: "shop", key: key, method: "POST", path: "/y", body: []) == .proceed)
    }

    @Test(arguments: [
        ("short", false), ("abcdefghijklmnop", true), (String(repeating: "a", count: 36), true),
        (String(repeating: "a", count: 37), false), ("abcdefghijklmnop_", false), ("abcdefgh ijklmnop", false),
    ])
    func keyFormat(key: String, valid: Bool) {
        #expect(IdempotencyLedger.isValidKey(key) == valid)
    }

    /// A crash mid-request leaves the key reserved with no response: after the in-progress timeout it
    /// counts as not started (the retry runs), before it the retry is still a conflict.
    @Test func aReservationWithoutAnswerTimesOutIntoNotStarted() async throws {
        let fixture = PaymentsFixture(
            configuration: PaymentsConfiguration(
                publicBaseURL: "https://vault.example/", idempotencyInProgressTimeout: 60))
        let ledger = fixture.services.idempotency
        let body = Array(#"{"Currency":"EUR"}"#.utf8)
        #expect(try await ledger.begin(clientId: "shop", key: key, method: "POST", path: "/p", body: body) == .proceed)
        fixture.clock.advance(by: 59)
        let early = await PaymentsError.from {
            try await ledger.begin(clientId: "shop", key: key, method: "POST", path: "/p", body: body)
        }
        #expect(early?.code == .idempotencyConflict)
        fixture.clock.advance(by: 1)
        #expect(try await ledger.begin(clientId: "shop", key: key, method: "POST", path: "/p", body: body) == .proceed)
        // The retry holds the key now: a third attempt right away conflicts again.
        let third = await PaymentsError.from {
            try await ledger.begin(clientId: "shop", key: key, method: "POST", path: "/p", body: body)
        }
        #expect(third?.code == .idempotencyConflict)
        // An answered entry does not time out: it replays for the whole retention.
        let stored = StoredResponse(
            statusCode: 200, contentType: "application/json", body: Array("{}".utf8), requestURL: "/p", date: 1)
        try await ledger.record(clientId: "shop", key: key, response: stored)
        fixture.clock.advance(by: 3600)
        #expect(
            try await ledger.begin(clientId: "shop", key: key, method: "POST", path: "/p", body: body)
                == .replay(stored))
    }

    @Test func abandonedReservationFreesTheKey() async throws {
        let fixture = PaymentsFixture()
        let ledger = fixture.services.idempotency
        #expect(try await ledger.begin(clientId: "shop", key: key, method: "POST", path: "/p", body: [1]) == .proceed)
        try await ledger.abandon(clientId: "shop", key: key)
        #expect(try await ledger.begin(clientId: "shop", key: key, method: "POST", path: "/p", body: [2]) == .proceed)
        let none = await PaymentsError.from { try await ledger.response(clientId: "shop", key: "unknown-key-0000000") }
        #expect(none?.code == .correlationIdNotFound)
    }
}
