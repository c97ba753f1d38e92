import Foundation

/// The decision the risk engine hands to authorization.
public enum RiskDecision: String, Sendable, Codable, Comparable {
    /// Frictionless is permitted.
    case allow
    /// 3-D Secure is forced.
    case challenge
    /// Refused: FAILED 008500.
    case block

    private var rank: Int {
        switch self {
        case .allow: 0
        case .challenge: 1
        case .block: 2
        }
    }

    public static func < (lhs: RiskDecision, rhs: RiskDecision) -> Bool { lhs.rank < rhs.rank }
}

/// One rule that fired, with the points it added and a human-readable detail (never card data).
public struct RiskReason: Sendable, Codable, Equatable {
    /// Stable rule name: `velocity.card`, `velocity.user`, `velocity.ip`, `velocity.device`,
    /// `device.cards`, `failures.before`, `country.mismatch`, `amount.unusual`.
    public var rule: String
    public var detail: String
    public var points: Int

    public init(rule: String, detail: String, points: Int) {
        self.rule = rule
        self.detail = detail
        self.points = points
    }
}

/// The engine's verdict on one transaction: score, decision and every reason.
public struct RiskAssessment: Sendable, Codable, Equatable {
    public var score: Int
    public var decision: RiskDecision
    public var reasons: [RiskReason]

    public init(score: Int, decision: RiskDecision, reasons: [RiskReason]) {
        self.score = score
        self.decision = decision
        self.reasons = reasons
    }
}

/// What is known about a transaction and its history when it is scored. The payments service
/// gathers it from the store (counts within the policy's window); a missing profiling attempt just
/// leaves the device fields nil.
public struct RiskSignals: Sendable, Equatable {
    public var amount: Int64
    /// Earlier transactions within the window, by the same card fingerprint, user, IP and device.
    public var recentByCard: Int = 0
    public var recentByUser: Int = 0
    public var recentByIP: Int = 0
    public var recentByDevice: Int = 0
    /// Distinct card fingerprints seen on this device within the window, this card included.
    public var distinctCardsOnDevice: Int = 0
    /// Failed transactions (declines, failed challenges) within the window for this card or user.
    public var recentFailures: Int = 0
    /// ISO 3166 alpha-2 country of the card's BIN and of the client IP, when known.
    public var cardCountry: String?
    public var ipCountry: String?
    /// Amounts of the user's earlier succeeded transactions (minor units, same currency). Setting it sets
    /// ``userHistoryCount`` and ``userHistoryLargest``, which are what the rules read; a caller that keeps the
    /// history counted (the payments service) sets those two and lists nothing here.
    public var userHistory: [Int64] = [] {
        didSet {
            userHistoryCount = userHistory.count
            userHistoryLargest = userHistory.max() ?? 0
        }
    }
    /// How many earlier succeeded transactions the user has (same currency).
    public var userHistoryCount = 0
    /// The largest of their amounts (0 when there are none).
    public var userHistoryLargest: Int64 = 0

    public init(amount: Int64) {
        self.amount = amount
    }
}

/// Thresholds of the risk rules. Every field has a default and can be set in configuration.
public struct RiskPolicy: Sendable, Codable, Equatable {
    /// The window the velocity counts look back over.
    public var windowSeconds: Int = 3600
    /// More earlier transactions than this in the window adds `velocityPoints`; more than twice
    /// this adds `velocityPoints` twice.
    public var maxPerCard: Int = 5
    public var maxPerUser: Int = 10
    public var maxPerIP: Int = 20
    public var maxPerDevice: Int = 10
    public var velocityPoints: Int = 40
    /// Distinct cards on one device: above the first, challenge; above the second, block.
    public var cardsPerDeviceChallenge: Int = 2
    public var cardsPerDeviceBlock: Int = 4
    /// Points per earlier failure in the window, capped.
    public var pointsPerFailure: Int = 15
    public var maxFailurePoints: Int = 60
    /// Card country differs from IP country.
    public var countryMismatchPoints: Int = 30
    /// Amount above `unusualAmountFactor` × the largest earlier amount (with at least
    /// `minimumHistory` earlier transactions).
    public var unusualAmountFactor: Int64 = 5
    public var minimumHistory: Int = 3
    public var unusualAmountPoints: Int = 40
    /// Score at or above which the decision is challenge, and block.
    public var challengeScore: Int = 50
    public var blockScore: Int = 100

    public init() {}
}

/// Scores transactions with explainable rules. Pure: the same signals always give the same result.
public struct RiskEngine: Sendable {
    public var policy: RiskPolicy

    public init(policy: RiskPolicy = RiskPolicy()) {
        self.policy = policy
    }

    /// Scores `signals` and decides.
    public func assess(_ signals: RiskSignals) -> RiskAssessment {
        var reasons: [RiskReason] = []
        func velocity(_ rule: String, _ count: Int, _ limit: Int, _ what: String) {
            guard count > limit else { return }
            let points = count > 2 * limit ? 2 * policy.velocityPoints : policy.velocityPoints
            reasons.append(
                RiskReason(
                    rule: rule, detail: "\(count) transactions by this \(what) within the window (limit \(limit))",
                    points: points))
        }
        velocity("velocity.card", signals.recentByCard, policy.maxPerCard, "card")
        velocity("velocity.user", signals.recentByUser, policy.maxPerUser, "user")
        velocity("velocity.ip", signals.recentByIP, policy.maxPerIP, "IP address")
        velocity("velocity.device", signals.recentByDevice, policy.maxPerDevice, "device")

        if signals.distinctCardsOnDevice > policy.cardsPerDeviceBlock {
            reasons.append(
                RiskReason(
                    rule: "device.cards",
                    detail:
                        "\(signals.distinctCardsOnDevice) different cards tried from one device (block above \(policy.cardsPerDeviceBlock))",
                    points: policy.blockScore))
        } else if signals.distinctCardsOnDevice > policy.cardsPerDeviceChallenge {
            reasons.append(
                RiskReason(
                    rule: "device.cards",
                    detail:
                        "\(signals.distinctCardsOnDevice) different cards tried from one device (challenge above \(policy.cardsPerDeviceChallenge))",
                    points: policy.challengeScore))
        }

        if signals.recentFailures > 0 {
            let points = min(policy.maxFailurePoints, signals.recentFailures * policy.pointsPerFailure)
            reasons.append(
                RiskReason(
                    rule: "failures.before", detail: "\(signals.recentFailures) failed attempts within the window",
                    points: points))
        }

        if let card = signals.cardCountry, let ip = signals.ipCountry, card != ip {
            reasons.append(
                RiskReason(
                    rule: "country.mismatch", detail: "card issued in \(card), IP address in \(ip)",
                    points: policy.countryMismatchPoints))
        }

        if signals.userHistoryCount >= policy.minimumHistory, signals.userHistoryLargest > 0 {
            let largest = signals.userHistoryLargest
            let (limit, overflow) = largest.multipliedReportingOverflow(by: policy.unusualAmountFactor)
            if !overflow && signals.amount > limit {
                reasons.append(
                    RiskReason(
                        rule: "amount.unusual",
                        detail: "amount above \(policy.unusualAmountFactor)x the user's largest earlier amount",
                        points: policy.unusualAmountPoints))
            }
        }

        let score = reasons.reduce(0) { $0 + $1.points }
        let decision: RiskDecision =
            score >= policy.blockScore ? .block : score >= policy.challengeScore ? .challenge : .allow
        return RiskAssessment(score: score, decision: decision, reasons: reasons)
    }
}
