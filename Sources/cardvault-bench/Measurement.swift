/// One timed run of a workload: its rate and, when the workload measures them, its latencies.
struct Sample: Codable, Sendable {
    /// Operations per second, in the unit of the comparison the run belongs to.
    var rate: Double
    /// Latency percentiles of the run, when the workload measures per-operation latency.
    var latency: LatencySummary?
    /// Operations that failed (non-2xx answers, socket errors, failed transactions).
    var errors: Int = 0
    /// CPU the load generator used, in cores (CPU seconds / wall seconds), when one drove the run.
    var generatorCores: Double?
}

/// One point of a latency distribution: the latency below which `percentile` percent fall.
struct LatencyPoint: Codable, Sendable {
    var percentile: Double
    var micros: Double
}

/// A latency distribution: the headline percentiles and the curve the report draws.
struct LatencySummary: Codable, Sendable {
    var p50Micros: Double
    var p99Micros: Double
    var p999Micros: Double
    /// Ascending percentiles, for the percentile plot.
    var curve: [LatencyPoint]

    /// The percentiles every curve samples (where the data allows).
    static let curvePercentiles: [Double] = [
        0, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99,
    ]

    /// A summary from a curve; the headline figures are read off it.
    init(curve: [LatencyPoint]) {
        let sorted = curve.sorted { $0.percentile < $1.percentile }
        self.curve = sorted
        p50Micros = LatencySummary.value(at: 50, in: sorted)
        p99Micros = LatencySummary.value(at: 99, in: sorted)
        p999Micros = LatencySummary.value(at: 99.9, in: sorted)
    }

    /// A summary from raw latencies in microseconds (any order).
    init(micros: [Double]) {
        let sorted = micros.sorted()
        self.init(
            curve: LatencySummary.curvePercentiles.map {
                LatencyPoint(percentile: $0, micros: Statistics.percentile($0, ofSorted: sorted))
            })
    }

    /// The latency at `percentile`, interpolated linearly between the curve's neighbouring points.
    static func value(at percentile: Double, in curve: [LatencyPoint]) -> Double {
        guard let first = curve.first, let last = curve.last else { return 0 }
        if percentile <= first.percentile { return first.micros }
        if percentile >= last.percentile { return last.micros }
        for (low, high) in zip(curve, curve.dropFirst()) where percentile <= high.percentile {
            let span = high.percentile - low.percentile
            if span <= 0 { return high.micros }
            return low.micros + (high.micros - low.micros) * (percentile - low.percentile) / span
        }
        return last.micros
    }

    /// The per-point median of several runs' distributions (points matched by percentile).
    static func median(of summaries: [LatencySummary]) -> LatencySummary? {
        guard let first = summaries.first else { return nil }
        if summaries.count == 1 { return first }
        let points = first.curve.map { point in
            LatencyPoint(
                percentile: point.percentile,
                micros: Statistics.median(summaries.map { value(at: point.percentile, in: $0.curve) })
            )
        }
        return LatencySummary(curve: points)
    }
}

/// The repeated runs of one side (subject or anchor) of a comparison.
struct Series: Codable, Sendable {
    /// What ran, e.g. "CardVault (VaultCrypto)" or "nginx 1.22 (64-byte body)".
    var label: String
    /// Each run's rate, in run order.
    var runs: [Double]
    /// The median of `runs`.
    var median: Double
    /// The per-percentile median of the runs' latency distributions, when measured.
    var latency: LatencySummary?
    /// Failed operations summed over the runs.
    var errors: Int
    /// The median CPU the load generator used, in cores, when one drove the runs.
    var generatorCores: Double?

    init(label: String, samples: [Sample]) {
        self.label = label
        runs = samples.map(\.rate)
        median = Statistics.median(runs)
        latency = LatencySummary.median(of: samples.compactMap(\.latency))
        errors = samples.reduce(0) { $0 + $1.errors }
        let cores = samples.compactMap(\.generatorCores)
        generatorCores = cores.isEmpty ? nil : Statistics.median(cores)
    }
}

/// A goal from the issue and whether this run meets it.
struct Target: Codable, Sendable {
    /// The goal in words, e.g. "≥ 0.8x the C baseline".
    var goal: String
    /// Whether this run meets it; nil when it cannot be told (subject missing).
    var met: Bool?
}

/// One line of the results: a subject measured side by side with its anchor in the same run.
struct Comparison: Codable, Sendable {
    /// What is measured, e.g. "tokenize" or "GET @ 64 conns".
    var name: String
    /// The unit of the rates, e.g. "ops/s".
    var unit: String
    /// The CardVault side; nil when it could not be measured (see `subjectNote`).
    var subject: Series?
    /// Why the subject has no figures ("not available yet (subject not built)", or a failure).
    var subjectNote: String?
    /// The anchor side: the physical limit or the peer, run in the same process run.
    var anchor: Series?
    /// Why the anchor has no figures.
    var anchorNote: String?
    /// subject median / anchor median, when both exist.
    var ratio: Double?
    /// The goal for this line, if it has one.
    var target: Target?
    /// Anything a reader must know to read the line right (placeholders, caveats).
    var note: String?
}

/// Everything one suite measured.
struct SuiteReport: Codable, Sendable {
    var name: String
    var title: String
    var comparisons: [Comparison]
    /// Facts about the set-up worth keeping with the figures (versions, settings, checks).
    var notes: [String]
    /// Wall time the suite took, in seconds.
    var seconds: Double
}
