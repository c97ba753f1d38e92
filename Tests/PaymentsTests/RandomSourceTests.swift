import CardVaultTesting
import Testing
import VaultCore

@testable import Payments

/// Randomness is injected: the merchant API draws every identifier and secret from the environment's
/// `RandomSource`, so a test can make them reproducible.
@Suite struct RandomSourceTests {
    static func userId(seed: UInt64) async throws -> String {
        let environment = PaymentsEnvironment.testing(random: SeededRandom(seed: seed))
        var fields = UserFields()
        fields.firstName = "Ada"
        fields.lastName = "Lovelace"
        fields.email = "ada@example.com"
        return try await UserService(environment: environment).create(
            clientId: "shop", type: .natural, sca: false, fields: fields
        ).id
    }

    @Test func identifiersComeFromTheInjectedSource() async throws {
        let first = try await Self.userId(seed: 42)
        #expect(first.hasPrefix("user_"))
        #expect(try await Self.userId(seed: 42) == first)
        #expect(try await Self.userId(seed: 43) != first)
    }

    @Test func secretsComeFromItToo() {
        let one = Identifier.secret(count: 32, random: SeededRandom(seed: 7))
        #expect(one == Identifier.secret(count: 32, random: SeededRandom(seed: 7)))
        #expect(one != Identifier.secret(count: 32, random: SeededRandom(seed: 8)))
    }
}
