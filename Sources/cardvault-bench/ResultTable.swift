/// The terminal table printed at the end: one row per comparison, medians, ratio, latencies.
struct ResultTable {
    let suites: [SuiteReport]

    private static let header = [
        "suite", "measure", "unit", "CardVault", "anchor", "ratio", "CardVault p50/p99/p99.9", "anchor p50/p99/p99.9",
        "target",
    ]

    /// The table as text, columns padded, one line per comparison.
    func render() -> String {
        var rows: [[String]] = []
        for suite in suites {
            if suite.comparisons.isEmpty {
                rows.append([suite.name, "–", "", "", "", "", "", "", ""])
            }
            for (index, comparison) in suite.comparisons.enumerated() {
                rows.append(row(comparison, suite: index == 0 ? suite.name : ""))
            }
        }
        let widths = Self.header.indices.map { column in
            ([Self.header] + rows).map { $0[column].count }.max() ?? 0
        }
        func line(_ cells: [String]) -> String {
            var text = ""
            for (column, cell) in cells.enumerated() {
                let alignRight = (3...5).contains(column)
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                text += (column == 0 ? "" : " │ ") + (alignRight ? padding + cell : cell + padding)
            }
            return text
        }
        let rule = widths.enumerated().map { String(repeating: "─", count: $0.element + ($0.offset == 0 ? 1 : 2)) }
            .joined(separator: "┼")
        var text = line(Self.header) + "\n" + rule + "\n"
        for (index, cells) in rows.enumerated() {
            if index > 0 && !cells[0].isEmpty { text += rule + "\n" }
            text += line(cells) + "\n"
        }
        return text
    }

    private func row(_ comparison: Comparison, suite: String) -> [String] {
        let subject =
            comparison.subject.map { Formatting.rate($0.median) + errorsMark($0) }
            ?? comparison.subjectNote ?? "–"
        let anchor =
            comparison.anchor.map { Formatting.rate($0.median) + errorsMark($0) }
            ?? comparison.anchorNote ?? "–"
        let ratio = comparison.ratio.map(Formatting.ratio) ?? "–"
        var target = "–"
        if let goal = comparison.target {
            let verdict = goal.met.map { $0 ? "met" : "not met" } ?? "open"
            target = goal.goal + ": " + verdict
        }
        return [
            suite, comparison.name, comparison.unit, subject, anchor, ratio,
            latency(comparison.subject?.latency), latency(comparison.anchor?.latency), target,
        ]
    }

    private func errorsMark(_ series: Series) -> String { series.errors > 0 ? " (\(series.errors) errors)" : "" }

    private func latency(_ summary: LatencySummary?) -> String {
        guard let summary else { return "" }
        return [summary.p50Micros, summary.p99Micros, summary.p999Micros].map(Formatting.micros)
            .joined(separator: " / ")
    }
}
