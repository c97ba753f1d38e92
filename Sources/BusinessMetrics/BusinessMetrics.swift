import Foundation
import Synchronization
import VaultCore

/// The business counters of `/metrics`: tokenizations by result, transactions by status and result code, 3-D
/// Secure challenges by outcome, risk decisions and the rules that fired, with two histograms (risk scores,
/// challenge answer times).
///
/// Every label value is one of a fixed set this file or the domain defines (result codes, rule names, statuses):
/// never an identifier, an amount, a card number or anything a client sends. The tokenization counters are
/// atomics (the hot path takes no lock and allocates nothing to count). So are the counts a frictionless pay-in
/// adds (its statuses, the risk decision, the rules of the fixed rule set, the score histogram); the rarer series
/// (declines by result code, challenge answer times, labels outside the fixed sets) share one lock.
public final class BusinessMetrics: Sendable {
    /// How a tokenization request ended.
    public enum TokenizationResult: Sendable, Equatable {
        case success
        /// Refused with a tokenization-server code (`02625` invalid number, `02626` bad expiry ...).
        case refused(String)
        case rateLimited
        /// A browser origin not in `checkoutOrigins`: refused before the card was read.
        case originRefused
        /// The form could not be read.
        case badRequest
        case unavailable
        case error
    }

    /// The tokenization-server codes counted under their own label; others count as `other`.
    static let tokenizationCodes = ["01902", "02624", "02625", "02626", "02627", "02628", "02631", "09101", "09104"]

    private let tokenizedSuccess = Atomic<UInt64>(0)
    private let tokenizedRateLimited = Atomic<UInt64>(0)
    private let tokenizedOriginRefused = Atomic<UInt64>(0)
    private let tokenizedBadRequest = Atomic<UInt64>(0)
    private let tokenizedUnavailable = Atomic<UInt64>(0)
    private let tokenizedError = Atomic<UInt64>(0)
    private let refused01902 = Atomic<UInt64>(0)
    private let refused02624 = Atomic<UInt64>(0)
    private let refused02625 = Atomic<UInt64>(0)
    private let refused02626 = Atomic<UInt64>(0)
    private let refused02627 = Atomic<UInt64>(0)
    private let refused02628 = Atomic<UInt64>(0)
    private let refused02631 = Atomic<UInt64>(0)
    private let refused09101 = Atomic<UInt64>(0)
    private let refused09104 = Atomic<UInt64>(0)
    private let refusedOther = Atomic<UInt64>(0)

    /// 3-D Secure challenge outcomes.
    public enum ChallengeOutcome: String, Sendable, CaseIterable {
        case started, succeeded, failed, cancelled, expired
    }

    private let challengesStarted = Atomic<UInt64>(0)
    private let challengesSucceeded = Atomic<UInt64>(0)
    private let challengesFailed = Atomic<UInt64>(0)
    private let challengesCancelled = Atomic<UInt64>(0)
    private let challengesExpired = Atomic<UInt64>(0)

    /// Upper bounds of the risk score histogram (points).
    public static let riskScoreBounds: [Int] = [0, 10, 20, 40, 60, 80, 100, 120, 150, 200]
    /// Upper bounds of the challenge answer time histogram (seconds from the transaction's creation).
    public static let challengeSecondsBounds: [Double] = [1, 5, 10, 30, 60, 120, 300, 600, 1800]

    private struct TransactionKey: Hashable {
        var kind: String
        var status: String
        var resultCode: String
    }

    private struct Histogram {
        var buckets: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0

        init(bounds: Int) { buckets = [UInt64](repeating: 0, count: bounds + 1) }

        mutating func observe(bucket: Int, value: Double) {
            buckets[bucket] += 1
            sum += value
            count += 1
        }
    }

    /// The series counted under the lock: transaction statuses outside ``fastStatuses``, decisions and rules
    /// outside the fixed sets, and the challenge answer times.
    private struct Transactions {
        var byStatus: [TransactionKey: UInt64] = [:]
        var decisions: [String: UInt64] = [:]
        var rules: [String: UInt64] = [:]
        var challengeSeconds = Histogram(bounds: BusinessMetrics.challengeSecondsBounds.count)
    }

    private let transactions = Locked(Transactions())

    /// The transaction kinds, and the (status, result code) pairs of every pay-in that is created pending or
    /// succeeds, counted in ``statusCounts`` without a lock (index: kind × pairs + pair).
    static let fastKinds = ["payin", "validation"]
    static let fastStatuses: [(status: String, resultCode: String)] = [("CREATED", ""), ("SUCCEEDED", "000000")]
    private let statusCounts: InlineArray<4, Atomic<UInt64>>
    /// The risk engine's decisions, and its rules (`RiskReason.rule`), counted without a lock.
    static let decisionNames = ["allow", "challenge", "block"]
    static let ruleNames = [
        "velocity.card", "velocity.user", "velocity.ip", "velocity.device", "device.cards", "failures.before",
        "country.mismatch", "amount.unusual",
    ]
    private let decisionCounts: InlineArray<3, Atomic<UInt64>>
    private let ruleCounts: InlineArray<8, Atomic<UInt64>>
    /// The risk score histogram: one count per bucket (``riskScoreBounds`` and +Inf) and the sum of the scores.
    private let scoreBuckets: InlineArray<11, Atomic<UInt64>>
    private let scoreSum = Atomic<Int>(0)

    public init() {
        // The sizes are the lists' (checked by the tests: every listed name and bucket has its counter).
        statusCounts = InlineArray { _ in Atomic<UInt64>(0) }
        decisionCounts = InlineArray { _ in Atomic<UInt64>(0) }
        ruleCounts = InlineArray { _ in Atomic<UInt64>(0) }
        scoreBuckets = InlineArray { _ in Atomic<UInt64>(0) }
        precondition(
            statusCounts.count == Self.fastKinds.count * Self.fastStatuses.count
                && decisionCounts.count == Self.decisionNames.count && ruleCounts.count == Self.ruleNames.count
                && scoreBuckets.count == Self.riskScoreBounds.count + 1)
    }

    /// The lock-free slot of a transaction status, if it has one.
    private static func statusSlot(kind: String, status: String, resultCode: String) -> Int? {
        guard let kindIndex = fastKinds.firstIndex(of: kind),
            let pair = fastStatuses.firstIndex(where: { $0.status == status && $0.resultCode == resultCode })
        else { return nil }
        return kindIndex * fastStatuses.count + pair
    }

    // MARK: Recording

    /// Counts one tokenization request.
    public func tokenization(_ result: TokenizationResult) {
        withCounter(result) { $0.add(1, ordering: .relaxed) }
    }

    private func withCounter(_ result: TokenizationResult, _ body: (borrowing Atomic<UInt64>) -> Void) {
        switch result {
        case .success: body(tokenizedSuccess)
        case .rateLimited: body(tokenizedRateLimited)
        case .originRefused: body(tokenizedOriginRefused)
        case .badRequest: body(tokenizedBadRequest)
        case .unavailable: body(tokenizedUnavailable)
        case .error: body(tokenizedError)
        case .refused(let code):
            switch code {
            case "01902": body(refused01902)
            case "02624": body(refused02624)
            case "02625": body(refused02625)
            case "02626": body(refused02626)
            case "02627": body(refused02627)
            case "02628": body(refused02628)
            case "02631": body(refused02631)
            case "09101": body(refused09101)
            case "09104": body(refused09104)
            default: body(refusedOther)
            }
        }
    }

    /// How many tokenizations ended with `result` (tests, diagnostics).
    public func count(_ result: TokenizationResult) -> UInt64 {
        var value: UInt64 = 0
        withCounter(result) { value = $0.load(ordering: .relaxed) }
        return value
    }

    /// Counts a challenge outcome.
    public func challenge(_ outcome: ChallengeOutcome) {
        withCounter(outcome) { $0.add(1, ordering: .relaxed) }
    }

    private func withCounter(_ outcome: ChallengeOutcome, _ body: (borrowing Atomic<UInt64>) -> Void) {
        switch outcome {
        case .started: body(challengesStarted)
        case .succeeded: body(challengesSucceeded)
        case .failed: body(challengesFailed)
        case .cancelled: body(challengesCancelled)
        case .expired: body(challengesExpired)
        }
    }

    /// How many challenges had `outcome` (tests, diagnostics).
    public func count(_ outcome: ChallengeOutcome) -> UInt64 {
        var value: UInt64 = 0
        withCounter(outcome) { value = $0.load(ordering: .relaxed) }
        return value
    }

    /// Counts a transaction (pay-in or card validation) entering `status` with `resultCode` (empty while pending).
    /// `kind` is `payin` or `validation`.
    public func transaction(kind: String, status: String, resultCode: String) {
        if let slot = Self.statusSlot(kind: kind, status: status, resultCode: resultCode) {
            statusCounts[slot].add(1, ordering: .relaxed)
            return
        }
        let key = TransactionKey(kind: kind, status: status, resultCode: resultCode)
        transactions.withLock { $0.byStatus[key, default: 0] += 1 }
    }

    /// Counts a risk assessment: its decision, every rule that added points, and its score.
    public func riskAssessment(decision: String, rules: [String], score: Int) {
        let bucket = Self.riskScoreBounds.firstIndex { score <= $0 } ?? Self.riskScoreBounds.count
        scoreBuckets[bucket].add(1, ordering: .relaxed)
        scoreSum.wrappingAdd(score, ordering: .relaxed)
        var others: [String] = []
        if let index = Self.decisionNames.firstIndex(of: decision) {
            decisionCounts[index].add(1, ordering: .relaxed)
        } else {
            others.append(decision)
        }
        var otherRules: [String] = []
        for rule in rules {
            if let index = Self.ruleNames.firstIndex(of: rule) {
                ruleCounts[index].add(1, ordering: .relaxed)
            } else {
                otherRules.append(rule)
            }
        }
        guard !others.isEmpty || !otherRules.isEmpty else { return }
        transactions.withLock { values in
            for decision in others { values.decisions[decision, default: 0] += 1 }
            for rule in otherRules { values.rules[rule, default: 0] += 1 }
        }
    }

    /// Observes how long a shopper took to answer a challenge (from the transaction's creation).
    public func challengeAnswered(afterSeconds seconds: Double) {
        let value = max(0, seconds)
        let bucket = Self.challengeSecondsBounds.firstIndex { value <= $0 } ?? Self.challengeSecondsBounds.count
        transactions.withLock { $0.challengeSeconds.observe(bucket: bucket, value: value) }
    }

    /// How many transactions of `kind` entered `status` with `resultCode` (tests, diagnostics).
    public func count(kind: String, status: String, resultCode: String) -> UInt64 {
        if let slot = Self.statusSlot(kind: kind, status: status, resultCode: resultCode) {
            return statusCounts[slot].load(ordering: .relaxed)
        }
        return transactions.withLock {
            $0.byStatus[TransactionKey(kind: kind, status: status, resultCode: resultCode)] ?? 0
        }
    }

    /// Every counted series of the lock and the atomics, as one snapshot for the exposition.
    private func snapshot() -> (values: Transactions, riskScores: Histogram) {
        var values = transactions.withLock { $0 }
        for (kindIndex, kind) in Self.fastKinds.enumerated() {
            for (pairIndex, pair) in Self.fastStatuses.enumerated() {
                let count = statusCounts[kindIndex * Self.fastStatuses.count + pairIndex].load(ordering: .relaxed)
                // As before: a series shows once it has been counted.
                if count > 0 {
                    values.byStatus[TransactionKey(kind: kind, status: pair.status, resultCode: pair.resultCode)] =
                        count
                }
            }
        }
        for (index, decision) in Self.decisionNames.enumerated() {
            values.decisions[decision, default: 0] += decisionCounts[index].load(ordering: .relaxed)
        }
        for (index, rule) in Self.ruleNames.enumerated() {
            let count = ruleCounts[index].load(ordering: .relaxed)
            if count > 0 { values.rules[rule, default: 0] += count }
        }
        var scores = Histogram(bounds: Self.riskScoreBounds.count)
        for index in scores.buckets.indices {
            scores.buckets[index] = scoreBuckets[index].load(ordering: .relaxed)
        }
        // The count is the buckets' total, so that the +Inf bucket and _count never disagree with the buckets.
        scores.count = scores.buckets.reduce(0, &+)
        scores.sum = Double(scoreSum.load(ordering: .relaxed))
        return (values, scores)
    }

    // MARK: Exposition

    /// The Prometheus text of every business series.
    public func prometheusText() -> String {
        var text = "# HELP cardvault_tokenizations_total Card tokenization requests, by result (and refusal code).\n"
        text += "# TYPE cardvault_tokenizations_total counter\n"
        func line(_ labels: String, _ value: UInt64) {
            text += "cardvault_tokenizations_total{" + labels + "} " + String(value) + "\n"
        }
        line(#"result="success""#, tokenizedSuccess.load(ordering: .relaxed))
        for code in Self.tokenizationCodes {
            line(#"result="refused",code=""# + code + #"""#, count(.refused(code)))
        }
        line(#"result="refused",code="other""#, refusedOther.load(ordering: .relaxed))
        line(#"result="rate_limited""#, tokenizedRateLimited.load(ordering: .relaxed))
        line(#"result="origin_refused""#, tokenizedOriginRefused.load(ordering: .relaxed))
        line(#"result="bad_request""#, tokenizedBadRequest.load(ordering: .relaxed))
        line(#"result="unavailable""#, tokenizedUnavailable.load(ordering: .relaxed))
        line(#"result="error""#, tokenizedError.load(ordering: .relaxed))

        text += "# HELP cardvault_3ds_challenges_total 3-D Secure challenges started, and how they ended.\n"
        text += "# TYPE cardvault_3ds_challenges_total counter\n"
        for outcome in ChallengeOutcome.allCases {
            text += #"cardvault_3ds_challenges_total{outcome=""# + outcome.rawValue + #""} "#
            text += String(count(outcome)) + "\n"
        }

        let (values, riskScores) = snapshot()
        text += "# HELP cardvault_transactions_total Pay-ins and card validations entering a status, by result code "
        text += "(empty while pending).\n"
        text += "# TYPE cardvault_transactions_total counter\n"
        let keys = values.byStatus.keys.sorted {
            ($0.kind, $0.status, $0.resultCode) < ($1.kind, $1.status, $1.resultCode)
        }
        for key in keys {
            text += #"cardvault_transactions_total{kind=""# + key.kind + #"",status=""# + key.status
            text += #"",result_code=""# + key.resultCode + #""} "# + String(values.byStatus[key]!) + "\n"
        }
        text += "# HELP cardvault_risk_decisions_total Risk engine decisions on transactions.\n"
        text += "# TYPE cardvault_risk_decisions_total counter\n"
        for decision in ["allow", "challenge", "block"] {
            text += #"cardvault_risk_decisions_total{decision=""# + decision + #""} "#
            text += String(values.decisions[decision] ?? 0) + "\n"
        }
        text += "# HELP cardvault_risk_rule_hits_total Risk rules that added points to a transaction's score.\n"
        text += "# TYPE cardvault_risk_rule_hits_total counter\n"
        for rule in values.rules.keys.sorted() {
            text += #"cardvault_risk_rule_hits_total{rule=""# + rule + #""} "# + String(values.rules[rule]!) + "\n"
        }
        text += histogram(
            "cardvault_risk_score", help: "Risk scores of assessed transactions (points).", riskScores,
            bounds: Self.riskScoreBounds.map(String.init))
        text += histogram(
            "cardvault_3ds_challenge_answer_seconds",
            help: "Time from a transaction's creation to the shopper's answer on the challenge page.",
            values.challengeSeconds, bounds: Self.challengeSecondsBounds.map { String(Int($0)) })
        return text
    }

    private func histogram(_ name: String, help: String, _ values: Histogram, bounds: [String]) -> String {
        var text = "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n"
        var cumulative: UInt64 = 0
        for (index, bound) in bounds.enumerated() {
            cumulative += values.buckets[index]
            text += name + #"_bucket{le=""# + bound + #""} "# + String(cumulative) + "\n"
        }
        text += name + #"_bucket{le="+Inf"} "# + String(values.count) + "\n"
        text += name + "_sum " + String(values.sum) + "\n"
        text += name + "_count " + String(values.count) + "\n"
        return text
    }
}
