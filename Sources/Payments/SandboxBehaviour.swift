public import Foundation
public import Risk

/// How the built-in sandbox issuer treats cards: which go frictionless, which are challenged, which
/// decline and with what result, and the largest amount allowed without a challenge.
///
/// Cards are named by their alias (first six, `XXXXXX`, last four), never by the full number, so
/// the table can sit in `config/` without holding a PAN. Loaded from `config/sandbox.json`.
public struct SandboxBehaviour: Sendable, Codable, Equatable {
    /// What the sandbox issuer does with one card.
    public struct CardRule: Sendable, Codable, Equatable {
        public enum Flow: String, Sendable, Codable {
            case frictionless, challenge, decline
        }

        public var flow: Flow
        /// The result code of a decline (`"101101"`, ...); ignored for other flows.
        public var resultCode: String?

        public init(flow: Flow, resultCode: String? = nil) {
            self.flow = flow
            self.resultCode = resultCode
        }
    }

    /// The largest amount, in minor units, that may go without a challenge (default 50.00).
    public var maxFrictionlessAmount: Int64
    /// The one-time code the sandbox ACS page accepts; any other code fails the challenge.
    public var challengeCode: String
    /// How long a challenge stays open, in seconds (default 10 minutes).
    public var challengeWindowSeconds: Int
    /// Rules by card alias (`"497010XXXXXX1119"`).
    public var cards: [String: CardRule]

    public init(
        maxFrictionlessAmount: Int64 = 5000,
        challengeCode: String = "123456",
        challengeWindowSeconds: Int = 600,
        cards: [String: CardRule] = SandboxBehaviour.mangopayTestCards
    ) {
        self.maxFrictionlessAmount = maxFrictionlessAmount
        self.challengeCode = challengeCode
        self.challengeWindowSeconds = challengeWindowSeconds
        self.cards = cards
    }

    /// The Mangopay sandbox cards and their documented flows.
    public static let mangopayTestCards: [String: CardRule] = [
        "497010XXXXXX1119": CardRule(flow: .frictionless),
        "497010XXXXXX8183": CardRule(flow: .challenge),
        "503395XXXXXX0004": CardRule(flow: .challenge),
        "375989XXXXX1119": CardRule(flow: .challenge),
    ]
}

/// The `SecureMode` a merchant asks for on a pay-in.
public enum SecureMode: String, Sendable, Codable, CaseIterable {
    /// Ask for an exemption: frictionless when allowed.
    case `default` = "DEFAULT"
    /// Always authenticate.
    case force = "FORCE"
    /// Let the issuer choose.
    case noChoice = "NO_CHOICE"
}

/// Decides how a transaction is authorized, from the merchant's request, the risk verdict and the
/// sandbox issuer's rules. Pure.
public enum AuthorizationPolicy {
    /// - Parameters:
    ///   - cardAlias: the card's alias, to find its sandbox rule.
    ///   - challengeDeadline: when a challenge started now would expire.
    public static func decide(
        secureMode: SecureMode,
        amount: Int64,
        risk: RiskDecision,
        cardAlias: String,
        sandbox: SandboxBehaviour,
        challengeDeadline: Date
    ) -> PayInStateMachine.Authorization {
        if risk == .block { return .decline(.blockedByFraudPolicy) }
        let rule = sandbox.cards[cardAlias]
        if rule?.flow == .decline {
            let code = rule?.resultCode ?? ResultCode.doNotHonor.code
            return .decline(ResultCode.known[code] ?? ResultCode(code: code, message: "Transaction refused"))
        }
        let needsChallenge =
            secureMode == .force || risk == .challenge || rule?.flow == .challenge
            || amount > sandbox.maxFrictionlessAmount
        return needsChallenge ? .challenge(expiresAt: challengeDeadline) : .frictionless
    }
}
