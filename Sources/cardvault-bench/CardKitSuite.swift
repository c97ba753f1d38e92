import CardKit
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
        notes.append(
            "Both sides cycle through 16 test PANs of different brands and lengths (15-16 digits). "
                + "Target: under 100 ns per PAN, i.e. at least 10M PANs/s on one core.")
        let anchor: Side
        switch BaselineProgram.named("cardkit_baseline", in: context) {
        case .success(let program):
            anchor = .measured(
                Workload(label: "C Luhn + prefix table (cardkit_baseline)") { seconds in
                    Sample(rate: try program.run([String(seconds)], as: BaselineRun.self).ops_per_second)
                })
        case .failure(let failure):
            anchor = .unavailable(failure.message)
        }
        let check = context.compare(
            "Luhn + brand", unit: "PANs/s", subject: .measured(CardKitWorkload.check()), anchor: anchor,
            plan: context.shortPlan,
            target: { Target(goal: "< 100 ns/PAN", met: $0.subject.map { $0.median >= 10_000_000 }) })
        var parse = context.compare(
            "PAN from typed text", unit: "PANs/s", subject: .measured(CardKitWorkload.parse()),
            anchor: .unavailable("see Luhn + brand"), plan: context.shortPlan,
            note: "PAN(\"4970 1011 2233 4455\"): strips spaces, then Luhn, brand and length; shown against the same "
                + "C anchor (which does no stripping)")
        parse.anchor = check.anchor
        parse.anchorNote = check.anchorNote
        if let subject = parse.subject, let anchor = parse.anchor, anchor.median > 0 {
            parse.ratio = subject.median / anchor.median
        }
        if let subject = check.subject {
            notes.append(
                "CardKit: \(Formatting.fixed(1e9 / subject.median, decimals: 1)) ns per PAN "
                    + "(CardNumberCheck, the allocation-free entry point).")
        }
        return [check, parse]
    }
}

/// CardKit's side; the PANs are the C baseline's (all valid, of known brands).
enum CardKitWorkload {
    static let pans = [
        "4970101122334455", "5555555555554444", "2223003122003222", "378282246310005",
        "6011111111111117", "3056930009020004", "3566002020360505", "6200000000000005",
        "6759649826438453", "2200000000000004", "5066991111111118", "6062828888666688",
        "4000000000000002", "5105105105105100", "371449635398431", "36227206271667",
    ]

    /// `CardNumberCheck(asciiDigits:)` over the PANs (Luhn, brand by longest prefix, length).
    static func check() -> Workload {
        Workload(label: "CardKit CardNumberCheck") { seconds in
            let digits = pans.map { Array($0.utf8) }
            return try timed(seconds) { n in
                digits[n % digits.count].withUnsafeBufferPointer { buffer in
                    let check = CardNumberCheck(asciiDigits: buffer)
                    return check.length &+ (check.isValid ? 1 : 0) &+ (check.brand == nil ? 0 : 2)
                }
            }
        }
    }

    /// `PAN(_:)` from text with the spaces a shopper types.
    static func parse() -> Workload {
        Workload(label: "CardKit PAN(text)") { seconds in
            let typed = pans.map { pan in
                var text = ""
                for (index, character) in pan.enumerated() {
                    if index > 0 && index % 4 == 0 { text += " " }
                    text.append(character)
                }
                return text
            }
            return try timed(seconds) { n in
                do {
                    return try PAN(typed[n % typed.count]).length
                } catch {
                    throw BenchFailure("a test PAN was refused: \(error)")
                }
            }
        }
    }
}
