import Foundation

/// `cardkit`: Luhn check + brand detection per PAN, CardKit against a plain C baseline
/// (`bench/c/cardkit_baseline.c`: byte-loop Luhn, longest-prefix scan over a range table).
struct CardKitSuite: BenchSuite {
    let name = "cardkit"
    let title = "Luhn check + brand detection per PAN (one core)"

    private struct BaselineRun: Decodable {
        var ops_per_second: Double
    }

    func run(in context: SuiteContext, notes: inout [String]) throws -> [Comparison] {
        notes.append("Both sides cycle through 16 test PANs of different brands and lengths (15-16 digits). "
            + "Target: under 100 ns per PAN, i.e. at least 10M PANs/s on one core.")
        let anchor: Side
        switch BaselineProgram.named("cardkit_baseline", in: context) {
        case .success(let program):
            anchor = .measured(Workload(label: "C Luhn + prefix table (cardkit_baseline)") { seconds in
                Sample(rate: try program.run([String(seconds)], as: BaselineRun.self).ops_per_second)
            })
        case .failure(let failure):
            anchor = .unavailable(failure.message)
        }
        return [
            context.compare(
                "Luhn + brand", unit: "PANs/s", subject: CardKitWorkload.side(), anchor: anchor,
                plan: context.shortPlan,
                target: { Target(goal: "< 100 ns/PAN", met: $0.subject.map { $0.median >= 10_000_000 }) })
        ]
    }
}

/// CardKit's side; the PANs are the C baseline's.
enum CardKitWorkload {
    static let pans = [
        "4970101122334455", "5555555555554444", "2223003122003222", "378282246310005",
        "6011111111111117", "3056930009020004", "3566002020360505", "6200000000000005",
        "6759649826438453", "2200000000000004", "5066991111111118", "6062828888666688",
        "4000000000000002", "5105105105105100", "371449635398431", "36227206271667",
    ]

    /// The workload, once CardKit's PAN API is on this branch.
    static func side() -> Side {
        .unavailable(subjectNotBuilt)
    }
}
