import Foundation
import Testing

@testable import Payments
@testable import Risk

@Suite struct AuthorizationPolicyTests {
    let sandbox = SandboxBehaviour()
    let deadline = Date(timeIntervalSince1970: 1_800_000_000)

    func decide(
        _ mode: SecureMode, _ amount: Int64, _ risk: RiskDecision, _ alias: String
    ) -> PayInStateMachine.Authorization {
        AuthorizationPolicy.decide(
            secureMode: mode, amount: amount, risk: risk, cardAlias: alias, sandbox: sandbox,
            challengeDeadline: deadline)
    }

    @Test func mangopaySandboxCardsFollowTheirDocumentedFlows() {
        #expect(decide(.default, 1000, .allow, "497010XXXXXX1119") == .frictionless)
        #expect(decide(.noChoice, 1000, .allow, "497010XXXXXX1119") == .frictionless)
        #expect(decide(.default, 1000, .allow, "497010XXXXXX8183") == .challenge(expiresAt: deadline))
        #expect(decide(.force, 1000, .allow, "497010XXXXXX1119") == .challenge(expiresAt: deadline))
    }

    @Test func amountsAboveTheFrictionlessMaximumAreChallenged() {
        #expect(decide(.default, 5000, .allow, "497010XXXXXX1119") == .frictionless)
        #expect(decide(.default, 5001, .allow, "497010XXXXXX1119") == .challenge(expiresAt: deadline))
    }

    @Test func riskOverridesTheCard() {
        #expect(decide(.default, 100, .challenge, "497010XXXXXX1119") == .challenge(expiresAt: deadline))
        #expect(decide(.default, 100, .block, "497010XXXXXX1119") == .decline(.blockedByFraudPolicy))
    }

    @Test func declineRulesUseTheirResultCode() {
        var table = sandbox
        table.cards["400000XXXXXX0002"] = .init(flow: .decline, resultCode: "008003")
        table.cards["400000XXXXXX0010"] = .init(flow: .decline)
        let stolen = AuthorizationPolicy.decide(
            secureMode: .default, amount: 100, risk: .allow, cardAlias: "400000XXXXXX0002", sandbox: table,
            challengeDeadline: deadline)
        #expect(stolen == .decline(ResultCode(code: "008003", message: "Stolen Card")))
        let plain = AuthorizationPolicy.decide(
            secureMode: .default, amount: 100, risk: .allow, cardAlias: "400000XXXXXX0010", sandbox: table,
            challengeDeadline: deadline)
        #expect(plain == .decline(.doNotHonor))
    }

    @Test func sandboxTableRoundTripsThroughJSON() throws {
        let json =
            #"{"maxFrictionlessAmount":2500,"challengeCode":"424242","challengeWindowSeconds":300,"cards":{"497010XXXXXX1119":{"flow":"challenge"}}}"#
        let table = try JSONDecoder().decode(SandboxBehaviour.self, from: Data(json.utf8))
        #expect(table.maxFrictionlessAmount == 2500)
        #expect(table.cards["497010XXXXXX1119"] == .init(flow: .challenge))
    }
}
