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
