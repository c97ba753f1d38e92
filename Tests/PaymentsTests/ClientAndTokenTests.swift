import Foundation
import Testing
import VaultCore
import VaultCrypto
import VaultStore

@testable import Payments

@Suite struct ClientAndTokenTests {
    @Test func createdClientAuthenticatesWithItsKeyOnly() async throws {
        let fixture = PaymentsFixture()
        let credentials = try await fixture.services.clients.create(name: "Acme Shop")
        #expect(credentials.clientId == "acme-shop")
        #expect(credentials.apiKey.count == 48)
        let client = try await fixture.services.clients.authenticate(clientId: "acme-shop", apiKey: credentials.apiKey)
        #expect(client.name == "Acme Shop")
        var wrong = credentials.apiKey
        wrong.removeLast()
        wrong += credentials.apiKey.hasSuffix("A") ? "B" : "A"
        let error = await PaymentsError.from {
            try await fixture.services.clients.authenticate(clientId: "acme-shop", apiKey: wrong)
        }
        #expect(error?.code == .invalidClient)
        let unknown = await PaymentsError.from {
            try await fixture.services.clients.authenticate(clientId: "nobody", apiKey: credentials.apiKey)
        }
        #expect(unknown?.code == .invalidClient)
    }

    @Test func apiKeyIsStoredOnlyAsASaltedHash() async throws {
        let fixture = PaymentsFixture()
        let first = try await fixture.services.clients.create(name: "one")
        let second = try await fixture.services.clients.create(name: "two")
        let stored = try await fixture.everyStoredValue().joined(separator: "\n")
        #expect(!stored.contains(first.apiKey))
        #expect(!stored.contains(second.apiKey))
        let a = try #require(try await fixture.services.clients.client("one"))
        let b = try #require(try await fixture.services.clients.client("two"))
        #expect(a.salt != b.salt)
        #expect(a.keyHash.count == 32)
    }

    @Test func duplicateAndUnusableNamesAreRefused() async throws {
        let fixture = PaymentsFixture()
        _ = try await fixture.services.clients.create(name: "dev")
        let duplicate = await PaymentsError.from { try await fixture.services.clients.create(name: "DEV") }
        #expect(duplicate?.code == .alreadyExists)
        let empty = await PaymentsError.from { try await fixture.services.clients.create(name: "!!!") }
        #expect(empty?.code == .invalidParameters)
        #expect(ClientRegistry.clientId(forName: "  My Shop 2 ") == "my-shop-2")
    }

    @Test func bearerTokensExpireAndSurviveARestart() async throws {
        let fixture = PaymentsFixture()
        _ = try await fixture.services.clients.create(name: "shop")
        let client = try #require(try await fixture.services.clients.client("shop"))
        let issued = try await fixture.services.bearerTokens.issue(for: client)
        #expect(issued.expiresIn == 3600)
        let token = issued.accessToken.unsafeRevealed
        #expect(try await fixture.services.bearerTokens.clientId(forToken: token) == "shop")
        // A new instance over the same store (a restarted daemon) still knows the token.
        let restarted = BearerTokens(environment: fixture.services.environment)
        #expect(try await restarted.clientId(forToken: token) == "shop")
        // The token itself is not stored.
        #expect(!(try await fixture.everyStoredValue().joined().contains(token)))
        fixture.clock.advance(by: 3599)
        #expect(try await restarted.clientId(forToken: token) == "shop")
        fixture.clock.advance(by: 1)
        let expired = await PaymentsError.from { try await restarted.clientId(forToken: token) }
        #expect(expired?.code == .invalidToken)
        let garbage = await PaymentsError.from { try await restarted.clientId(forToken: "x") }
        #expect(garbage?.code == .invalidToken)
        #expect(try await fixture.store.scanAll("bearer-tokens").isEmpty)
    }

    @Test func aTokenRevokedThroughAnotherDaemonStopsWorkingHereWithinASecond() async throws {
        let fixture = PaymentsFixture()
        _ = try await fixture.services.clients.create(name: "shop")
        let client = try #require(try await fixture.services.clients.client("shop"))
        let token = try await fixture.services.bearerTokens.issue(for: client).accessToken.unsafeRevealed
        // Daemon B (its own cache) on the same store knows the token.
        let other = BearerTokens(environment: fixture.services.environment)
        #expect(try await other.clientId(forToken: token) == "shop")
        // Daemon A rotates the client's key, revoking its tokens; B has the token cached.
        _ = try await fixture.services.clients.rotateKey(clientId: "shop", tokens: fixture.services.bearerTokens)
        fixture.clock.advance(by: 1)
        let revoked = await PaymentsError.from { try await other.clientId(forToken: token) }
        #expect(revoked?.code == .invalidToken)
        // The revocation is also gone from B's cache (not only answered once).
        #expect(other.cachedCount == 0)
    }

    @Test func issuedTokenNeverPrints() async throws {
        let fixture = PaymentsFixture()
        _ = try await fixture.services.clients.create(name: "shop")
        let client = try #require(try await fixture.services.clients.client("shop"))
        let issued = try await fixture.services.bearerTokens.issue(for: client)
        #expect("\(issued)".contains("[REDACTED]"))
        #expect(!"\(issued)".contains(issued.accessToken.unsafeRevealed))
    }
}
