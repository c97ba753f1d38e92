import VaultCore

/// Counters of forwards for `/metrics`: outcomes, and the destinations' answer times. No label holds a card id,
/// a host name or anything else a merchant chooses.
public final class ForwardMetrics: Sendable {
    /// How a forward ended.
    public enum Outcome: String, Sendable, CaseIterable {
        case sent
        case refusedPermission = "refused_permission"
        case refusedDestination = "refused_destination"
        case refusedRequest = "refused_request"
        case refusedCard = "refused_card"
        case busy
        case timeout
        case failed
    }

    private struct Counts: Sendable {
        var outcomes: [Outcome: Int] = [:]
        var responseSeconds: Double = 0
        var responses = 0
        var accessesRecorded = 0
    }

    private let counts = Locked(Counts())

    public init() {}

    func record(_ outcome: Outcome) {
        counts.withLock { $0.outcomes[outcome, default: 0] += 1 }
    }

    func recordResponse(seconds: Double) {
        counts.withLock { counts in
            counts.responseSeconds += seconds
            counts.responses += 1
        }
    }

    func recordAccesses(_ count: Int) {
        counts.withLock { $0.accessesRecorded += count }
    }

    /// The count of one outcome so far.
    public func count(_ outcome: Outcome) -> Int { counts.withLock { $0.outcomes[outcome] ?? 0 } }

    /// Prometheus text.
    public func prometheusText() -> String {
        let snapshot = counts.withLock { $0 }
        var text = "# HELP cardvault_forward_requests_total Forward requests by outcome.\n"
        text += "# TYPE cardvault_forward_requests_total counter\n"
        for outcome in Outcome.allCases {
            text +=
                "cardvault_forward_requests_total{outcome=\"\(outcome.rawValue)\"} \(snapshot.outcomes[outcome] ?? 0)\n"
        }
        text +=
            "# HELP cardvault_forward_destination_seconds Time from sending a forward to the destination's last byte.\n"
        text += "# TYPE cardvault_forward_destination_seconds summary\n"
        text += "cardvault_forward_destination_seconds_sum \(snapshot.responseSeconds)\n"
        text += "cardvault_forward_destination_seconds_count \(snapshot.responses)\n"
        text += "# HELP cardvault_card_accesses_total Card access records written (one per card per forward).\n"
        text += "# TYPE cardvault_card_accesses_total counter\n"
        text += "cardvault_card_accesses_total \(snapshot.accessesRecorded)\n"
        return text
    }
}
