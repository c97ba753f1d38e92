import BusinessMetrics
import Risk

extension BusinessMetrics {
    /// Counts a transaction just written by ``PayInService/create(clientId:request:purpose:)``: its status, its
    /// risk assessment, and the challenge it started.
    func created(_ payIn: PayIn, risk: RiskAssessment) {
        transaction(kind: Self.kind(payIn), status: payIn.status, resultCode: payIn.result?.code ?? "")
        riskAssessment(decision: risk.decision.rawValue, rules: risk.reasons.map(\.rule), score: risk.score)
        if payIn.secureModeNeeded, case .awaitingChallenge = payIn.machine.state { challenge(.started) }
    }

    /// Counts a transition written for `event`: the new status, and how the challenge ended.
    func transitioned(_ payIn: PayIn, event: PayInStateMachine.Event, now: Int64) {
        transaction(kind: Self.kind(payIn), status: payIn.status, resultCode: payIn.result?.code ?? "")
        switch event {
        case .challengeCompleted(let passed, _):
            challenge(passed ? .succeeded : .failed)
            challengeAnswered(afterSeconds: Double(now - payIn.creationDate))
        case .challengeCancelled:
            challenge(.cancelled)
            challengeAnswered(afterSeconds: Double(now - payIn.creationDate))
        case .expire:
            challenge(.expired)
        default:
            break
        }
    }

    private static func kind(_ payIn: PayIn) -> String { payIn.machine.purpose == .payIn ? "payin" : "validation" }
}
