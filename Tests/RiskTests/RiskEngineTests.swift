import Foundation
import Testing

@testable import Risk

@Suite struct RiskEngineTests {
    let engine = RiskEngine()

    @Test func aQuietTransactionIsAllowedWithNoReasons() {
        var signals = RiskSignals(amount: 1000)
        signals.recentByCard = 5  // at the limit, not above
        signals.distinctCardsOnDevice = 1
        let assessment = engine.assess(signals)
        #expect(assessment == RiskAssessment(score: 0, decision: .allow, reasons: []))
    }

    @Test func manyCardsFromOneDeviceChallengeThenBlock() {
        var signals = RiskSignals(amount: 1000)
        let decisions = (1...6).map { cards -> RiskDecision in
            signals.distinctCardsOnDevice = cards
            return engine.assess(signals).decision
        }
        #expect(decisions == [.allow, .allow, .challenge, .challenge, .block, .block])
        signals.distinctCardsOnDevice = 5
        #expect(engine.assess(signals).reasons.map(\.rule) == ["device.cards"])
    }

    @Test(arguments: [
        ("card", 6, 40),
        ("card", 11, 80), ("user", 11, 40), ("ip", 21, 40), ("device", 11, 40), ("device", 21, 80),
    ])
    func velocityAddsPointsAboveEachLimit(_ what: String, _ count: Int, _ points: Int) {
        var signals = RiskSignals(amount: 100)
        switch what {
        case "card": signals.recentByCard = count
        case "user": signals.recentByUser = count
        case "ip": signals.recentByIP = count
        default: signals.recentByDevice = count
        }
        let assessment = engine.assess(signals)
        #expect(assessment.reasons.map(\.rule) == ["velocity.\(what)"])
        #expect(assessment.score == points)
    }

    @Test func failuresAreCappedAndCountryMismatchAdds() {
        var signals = RiskSignals(amount: 100)
        signals.recentFailures = 10
        signals.cardCountry = "FR"
        signals.ipCountry = "US"
        let assessment = engine.assess(signals)
        #expect(assessment.reasons.map(\.rule) == ["failures.before", "country.mismatch"])
        #expect(assessment.score == 60 + 30)
        #expect(assessment.decision == .challenge)
    }

    @Test func unusualAmountNeedsEnoughHistory() {
        var signals = RiskSignals(amount: 50_001)
        signals.userHistory = [10_000, 2_000]
        #expect(engine.assess(signals).reasons.isEmpty)
        signals.userHistory.append(500)
        #expect(engine.assess(signals).reasons.map(\.rule) == ["amount.unusual"])
        signals.amount = 50_000
        #expect(engine.assess(signals).reasons.isEmpty)
    }

    @Test func reasonsNeverCarryCardNumbers() {
        var signals = RiskSignals(amount: 100)
        signals.recentByCard = 50
        signals.distinctCardsOnDevice = 9
        signals.cardCountry = "FR"
        signals.ipCountry = "GB"
        let text = engine.assess(signals).reasons.map(\.detail).joined()
        #expect(text.range(of: #"\d{12,}"#, options: .regularExpression) == nil)
    }
}

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

@Suite struct CountryTableTests {
    @Test func longestPrefixAndMostSpecificRangeWin() {
        let table = CountryTable(bins: ["4": "US", "497010": "FR"], ipv4: ["10.0.0.0/8": "DE", "10.1.0.0/16": "AT"])
        #expect(table.country(forBIN: "49701071") == "FR")
        #expect(table.country(forBIN: "41111111") == "US")
        #expect(table.country(forBIN: "51111111") == nil)
        #expect(table.country(forIP: "10.1.2.3") == "AT")
        #expect(table.country(forIP: "10.2.2.3") == "DE")
        #expect(table.country(forIP: "11.0.0.1") == nil)
        #expect(table.country(forIP: "2001:db8::1") == nil)
        #expect(table.country(forIP: "10.1.2") == nil)
        #expect(table.country(forIP: "10.1.2.256") == nil)
    }
}
