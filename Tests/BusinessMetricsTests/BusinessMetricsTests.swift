import Foundation
import Testing

@testable import BusinessMetrics

/// ``BusinessMetrics``: what each recording adds, and an exposition whose label values come only from fixed
/// vocabularies.
@Test func tokenizationAndChallengeCountersAddUp() {
    let metrics = BusinessMetrics()
    metrics.tokenization(.success)
    metrics.tokenization(.success)
    metrics.tokenization(.refused("02625"))
    metrics.tokenization(.refused("99999"))  // an unknown code counts as `other`, never as a label of its own
    metrics.tokenization(.originRefused)
    metrics.challenge(.started)
    metrics.challenge(.expired)
    #expect(metrics.count(.success) == 2)
    #expect(metrics.count(.refused("02625")) == 1)
    #expect(metrics.count(.refused("12345")) == 1)  // `other`
    #expect(metrics.count(.originRefused) == 1)
    #expect(metrics.count(.rateLimited) == 0)
    #expect(metrics.count(.started) == 1 && metrics.count(.expired) == 1 && metrics.count(.succeeded) == 0)
    let text = metrics.prometheusText()
    #expect(text.contains("cardvault_tokenizations_total{result=\"success\"} 2\n"))
    #expect(text.contains("cardvault_tokenizations_total{result=\"refused\",code=\"02625\"} 1\n"))
    #expect(text.contains("cardvault_tokenizations_total{result=\"refused\",code=\"other\"} 1\n"))
    #expect(!text.contains("99999"))
    #expect(text.contains("cardvault_3ds_challenges_total{outcome=\"expired\"} 1\n"))
}

@Test func transactionsRiskAndHistograms() {
    let metrics = BusinessMetrics()
    metrics.transaction(kind: "payin", status: "SUCCEEDED", resultCode: "000000")
    metrics.transaction(kind: "payin", status: "FAILED", resultCode: "101101")
    metrics.transaction(kind: "payin", status: "FAILED", resultCode: "101101")
    metrics.riskAssessment(decision: "challenge", rules: ["velocity.card", "device.cards"], score: 45)
    metrics.riskAssessment(decision: "allow", rules: [], score: 0)
    metrics.challengeAnswered(afterSeconds: 7)
    #expect(metrics.count(kind: "payin", status: "FAILED", resultCode: "101101") == 2)
    let text = metrics.prometheusText()
    #expect(
        text.contains(
            "cardvault_transactions_total{kind=\"payin\",status=\"FAILED\",result_code=\"101101\"} 2\n"))
    #expect(text.contains("cardvault_risk_decisions_total{decision=\"challenge\"} 1\n"))
    #expect(text.contains("cardvault_risk_decisions_total{decision=\"block\"} 0\n"))
    #expect(text.contains("cardvault_risk_rule_hits_total{rule=\"velocity.card\"} 1\n"))
    // Score 45 falls in the le="60" bucket (cumulative), score 0 in le="0".
    #expect(text.contains("cardvault_risk_score_bucket{le=\"0\"} 1\n"))
    #expect(text.contains("cardvault_risk_score_bucket{le=\"40\"} 1\n"))
    #expect(text.contains("cardvault_risk_score_bucket{le=\"60\"} 2\n"))
    #expect(text.contains("cardvault_risk_score_sum 45.0\n"))
    #expect(text.contains("cardvault_3ds_challenge_answer_seconds_bucket{le=\"5\"} 0\n"))
    #expect(text.contains("cardvault_3ds_challenge_answer_seconds_bucket{le=\"10\"} 1\n"))
    #expect(text.contains("cardvault_3ds_challenge_answer_seconds_count 1\n"))
    // Every sample line is `name{label="value",...} number` with values from the vocabularies.
    for line in text.split(separator: "\n") where !line.hasPrefix("#") {
        #expect(
            line.range(of: #"^[a-z_0-9]+(\{([a-z_]+="[A-Za-z0-9_.+]*",?)*\})? [0-9.]+$"#, options: .regularExpression)
                != nil, "\(line)")
    }
}

@Test func lockFreeAndLockedSeriesShowAsOne() {
    let metrics = BusinessMetrics()
    // Lock-free: created and succeeded statuses, the three decisions, the known rules, the score buckets.
    metrics.transaction(kind: "payin", status: "CREATED", resultCode: "")
    metrics.transaction(kind: "payin", status: "SUCCEEDED", resultCode: "000000")
    metrics.transaction(kind: "payin", status: "SUCCEEDED", resultCode: "000000")
    metrics.transaction(kind: "validation", status: "SUCCEEDED", resultCode: "000000")
    // Under the lock: a decline, and a rule outside the fixed set.
    metrics.transaction(kind: "payin", status: "FAILED", resultCode: "008500")
    metrics.riskAssessment(decision: "block", rules: ["device.cards", "some.new.rule"], score: 250)
    metrics.riskAssessment(decision: "allow", rules: [], score: 5)
    #expect(metrics.count(kind: "payin", status: "SUCCEEDED", resultCode: "000000") == 2)
    #expect(metrics.count(kind: "validation", status: "CREATED", resultCode: "") == 0)
    let text = metrics.prometheusText()
    #expect(text.contains("cardvault_transactions_total{kind=\"payin\",status=\"CREATED\",result_code=\"\"} 1\n"))
    #expect(
        text.contains("cardvault_transactions_total{kind=\"payin\",status=\"SUCCEEDED\",result_code=\"000000\"} 2\n"))
    #expect(
        text.contains(
            "cardvault_transactions_total{kind=\"validation\",status=\"SUCCEEDED\",result_code=\"000000\"} 1\n"))
    #expect(text.contains("cardvault_transactions_total{kind=\"payin\",status=\"FAILED\",result_code=\"008500\"} 1\n"))
    // A series never counted does not show.
    #expect(!text.contains("kind=\"validation\",status=\"CREATED\""))
    #expect(text.contains("cardvault_risk_decisions_total{decision=\"block\"} 1\n"))
    #expect(text.contains("cardvault_risk_rule_hits_total{rule=\"device.cards\"} 1\n"))
    #expect(text.contains("cardvault_risk_rule_hits_total{rule=\"some.new.rule\"} 1\n"))
    #expect(!text.contains("rule=\"velocity.card\""))
    // 5 falls in le="10", 250 only in +Inf; the count is the buckets' total.
    #expect(text.contains("cardvault_risk_score_bucket{le=\"0\"} 0\n"))
    #expect(text.contains("cardvault_risk_score_bucket{le=\"10\"} 1\n"))
    #expect(text.contains("cardvault_risk_score_bucket{le=\"200\"} 1\n"))
    #expect(text.contains("cardvault_risk_score_bucket{le=\"+Inf\"} 2\n"))
    #expect(text.contains("cardvault_risk_score_sum 255.0\n"))
    #expect(text.contains("cardvault_risk_score_count 2\n"))
}
