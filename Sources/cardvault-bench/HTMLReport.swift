import Foundation

/// Renders a run as one self-contained HTML page: inline CSS and SVG charts, no scripts, nothing
/// fetched from elsewhere.
struct HTMLReport {
    let report: RunReport

    private static let subjectColour = "#2f6fb0"
    private static let anchorColour = "#9a9a9a"

    /// The whole page.
    func render() -> String {
        var html = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8">
            <title>CardVault benchmark report</title>
            <style>
            body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
            h1{font-size:1.6em;margin-bottom:.2em}h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
            table{border-collapse:collapse;margin:.6em 0;font-size:13px}td,th{border:1px solid #ddd;padding:3px 7px;text-align:left}
            th{background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}
            .legend span{display:inline-block;width:12px;height:12px;margin:0 4px -1px 12px}
            .charts{display:flex;flex-wrap:wrap;gap:12px}.muted{color:#777}.met{color:#1b7a2e}.miss{color:#b0302f}
            svg text{font:11px system-ui,sans-serif;fill:#333}
            </style></head><body>
            <h1>CardVault benchmark report</h1>

            """
        html += "<p class=\"muted\">\(escape(report.machine.date)) · \(report.quick ? "quick run" : "full run") · "
        html += "\(Formatting.fixed(report.seconds, decimals: 0)) s"
        if !report.filters.isEmpty { html += " · suites matching: " + escape(report.filters.joined(separator: ", ")) }
        html += "</p>\n"
        html += machineTable()
        html += "<p class=\"legend\"><span style=\"background:\(Self.subjectColour)\"></span>CardVault"
        html += "<span style=\"background:\(Self.anchorColour)\"></span>anchor (same run)</p>\n"
        html += summaryTable()
        for suite in report.suites {
            html += suiteSection(suite)
        }
        html += "</body></html>\n"
        return html
    }

    /// Writes the page to `path`.
    func write(to path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        try Data(render().utf8).write(to: URL(fileURLWithPath: path))
    }

    private func machineTable() -> String {
        let facts = report.machine
        let rows: [(String, String)] = [
            ("CPU", "\(facts.cpuModel) · \(facts.cores) cores"),
            ("memory", Formatting.fixed(Double(facts.memoryBytes) / 1_073_741_824, decimals: 1) + " GiB"),
            ("kernel", facts.kernel), ("Swift", facts.swiftVersion), ("OpenSSL", facts.opensslVersion),
            ("nginx", facts.nginxVersion), ("wrk", facts.wrkVersion), ("PostgreSQL", facts.postgresVersion),
        ]
        var html = "<table>"
        for (key, value) in rows { html += "<tr><th>\(escape(key))</th><td>\(escape(value))</td></tr>" }
        return html + "</table>\n"
    }

    private func summaryTable() -> String {
        var html = "<h2>Summary</h2><table><tr><th>suite</th><th>measure</th><th>unit</th><th>CardVault</th>"
        html += "<th>anchor</th><th>ratio</th><th>target</th></tr>\n"
        for suite in report.suites {
            for comparison in suite.comparisons {
                html += "<tr><td>\(escape(suite.name))</td><td>\(escape(comparison.name))</td>"
                html += "<td>\(escape(comparison.unit))</td>"
                html += cell(comparison.subject, note: comparison.subjectNote)
                html += cell(comparison.anchor, note: comparison.anchorNote)
                html += "<td class=\"n\">\(comparison.ratio.map(Formatting.ratio) ?? "–")</td>"
                html += "<td>\(targetText(comparison.target))</td></tr>\n"
            }
        }
        return html + "</table>\n"
    }

    private func cell(_ series: Series?, note: String?) -> String {
        if let series {
            let errors = series.errors > 0 ? " (\(series.errors) errors)" : ""
            return "<td class=\"n\">\(Formatting.rate(series.median))\(errors)</td>"
        }
        return "<td class=\"muted\">\(escape(note ?? "–"))</td>"
    }

    private func targetText(_ target: Target?) -> String {
        guard let target else { return "–" }
        switch target.met {
        case .some(true): return "\(escape(target.goal)): <span class=\"met\">met</span>"
        case .some(false): return "\(escape(target.goal)): <span class=\"miss\">not met</span>"
        case .none: return "\(escape(target.goal)): <span class=\"muted\">open</span>"
        }
    }

    private func suiteSection(_ suite: SuiteReport) -> String {
        var html = "<h2>\(escape(suite.name)): \(escape(suite.title))</h2>\n"
        if !suite.notes.isEmpty {
            html += "<ul>" + suite.notes.map { "<li>\(escape($0))</li>" }.joined() + "</ul>\n"
        }
        guard !suite.comparisons.isEmpty else { return html + "<p class=\"muted\">nothing measured</p>" }
        html += "<h3>Throughput against the anchor</h3>\n" + throughputChart(suite.comparisons)
        let withLatency = suite.comparisons.filter { $0.subject?.latency != nil || $0.anchor?.latency != nil }
        if !withLatency.isEmpty {
            html += "<h3>Latency distributions</h3><div class=\"charts\">\n"
            for comparison in withLatency { html += latencyChart(comparison) }
            html += "</div>\n"
        }
        html += runsTable(suite.comparisons)
        for comparison in suite.comparisons {
            if let note = comparison.note {
                html += "<p class=\"muted\">\(escape(comparison.name)): \(escape(note))</p>"
            }
        }
        return html
    }

    /// Horizontal bars, two per comparison (CardVault, anchor), each row scaled to its larger bar.
    private func throughputChart(_ comparisons: [Comparison]) -> String {
        let labelWidth = 230.0
        let barWidth = 520.0
        let barHeight = 16.0
        let rowHeight = 48.0
        let width = labelWidth + barWidth + 330
        let height = rowHeight * Double(comparisons.count) + 8
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" "
        svg += "role=\"img\" aria-label=\"throughput against anchor\">\n"
        for (index, comparison) in comparisons.enumerated() {
            let top = Double(index) * rowHeight + 4
            let scale = max(comparison.subject?.median ?? 0, comparison.anchor?.median ?? 0)
            svg += text(comparison.name, x: 0, y: top + barHeight + 2)
            var detail = comparison.unit
            if let ratio = comparison.ratio { detail += " · ratio " + Formatting.ratio(ratio) }
            svg += text(detail, x: 0, y: top + barHeight + 16, muted: true)
            let bars: [(Series?, String?, String, Double)] = [
                (comparison.subject, comparison.subjectNote, Self.subjectColour, top),
                (comparison.anchor, comparison.anchorNote, Self.anchorColour, top + barHeight + 4),
            ]
            for (series, note, colour, y) in bars {
                if let series, scale > 0 {
                    let length = max(1, barWidth * series.median / scale)
                    svg +=
                        "<rect x=\"\(n(labelWidth))\" y=\"\(n(y))\" width=\"\(n(length))\" height=\"\(n(barHeight))\" "
                    svg += "fill=\"\(colour)\"><title>\(escape(series.label))</title></rect>\n"
                    for run in series.runs {
                        let x = labelWidth + barWidth * run / scale
                        svg += "<line x1=\"\(n(x))\" x2=\"\(n(x))\" y1=\"\(n(y + 2))\" y2=\"\(n(y + barHeight - 2))\" "
                        svg += "stroke=\"#000\" stroke-opacity=\".45\"/>\n"
                    }
                    let label = Formatting.rate(series.median) + " · " + series.label
                    svg += text(label, x: labelWidth + length + 6, y: y + barHeight - 4)
                } else {
                    svg +=
                        "<rect x=\"\(n(labelWidth))\" y=\"\(n(y))\" width=\"\(n(barWidth))\" height=\"\(n(barHeight))\" "
                    svg += "fill=\"none\" stroke=\"\(colour)\" stroke-dasharray=\"4 3\"/>\n"
                    svg += text(note ?? "not measured", x: labelWidth + 8, y: y + barHeight - 4, muted: true)
                }
            }
        }
        return svg + "</svg>\n"
    }

    /// A percentile plot: x is the percentile on a log scale of 1/(1-p), y the latency (log scale).
    private func latencyChart(_ comparison: Comparison) -> String {
        let width = 640.0
        let height = 300.0
        let left = 62.0
        let right = 24.0
        let top = 58.0
        let bottom = 36.0
        let lines: [(LatencySummary, String, String)] = [
            comparison.subject?.latency.map { ($0, Self.subjectColour, comparison.subject?.label ?? "") },
            comparison.anchor?.latency.map { ($0, Self.anchorColour, comparison.anchor?.label ?? "") },
        ].compactMap { $0 }
        let values = lines.flatMap { $0.0.curve.map(\.micros) }.filter { $0 > 0 }
        let low = log10(max(values.min() ?? 1, 0.1))
        let high = log10(max(values.max() ?? 10, 1))
        let span = max(high - low, 0.5)
        let maxX = 4.0  // 99.99th percentile
        func px(_ percentile: Double) -> Double {
            let q = min(percentile, 99.99) / 100
            return left + (width - left - right) * min(log10(1 / (1 - q)), maxX) / maxX
        }
        func py(_ micros: Double) -> Double {
            let value = log10(max(micros, 0.1))
            return top + (height - top - bottom) * (1 - (value - low) / span)
        }
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" "
        svg += "role=\"img\" aria-label=\"latency distribution\">\n"
        svg += text(comparison.name + " — latency by percentile", x: 0, y: 12)
        for (percentile, label) in [(0.0, "0"), (90, "90"), (99, "99"), (99.9, "99.9"), (99.99, "99.99")] {
            let x = px(percentile)
            svg += "<line x1=\"\(n(x))\" x2=\"\(n(x))\" y1=\"\(n(top))\" y2=\"\(n(height - bottom))\" stroke=\"#eee\"/>"
            svg += "<text x=\"\(n(x))\" y=\"\(n(height - bottom + 14))\" text-anchor=\"middle\">\(label)</text>"
        }
        svg += text("percentile", x: width / 2 - 25, y: height - 6, muted: true)
        var decade = floor(low)
        while decade <= high + 0.001 {
            for step in [1.0, 2, 5] {
                let micros = pow(10, decade) * step
                let value = log10(micros)
                guard value >= low - 0.001, value <= low + span + 0.001 else { continue }
                let y = py(micros)
                svg +=
                    "<line x1=\"\(n(left))\" x2=\"\(n(width - right))\" y1=\"\(n(y))\" y2=\"\(n(y))\" stroke=\"#eee\"/>"
                svg += text(Formatting.micros(micros), x: 2, y: y + 4)
            }
            decade += 1
        }
        for (index, line) in lines.enumerated() {
            let points = line.0.curve.map { "\(n(px($0.percentile))),\(n(py($0.micros)))" }.joined(separator: " ")
            svg += "<polyline fill=\"none\" stroke=\"\(line.1)\" stroke-width=\"2\" points=\"\(points)\"/>\n"
            for point in line.0.curve {
                svg += "<circle cx=\"\(n(px(point.percentile)))\" cy=\"\(n(py(point.micros)))\" r=\"2.5\" "
                svg += "fill=\"\(line.1)\"><title>p\(Formatting.significant(point.percentile)): "
                svg += "\(Formatting.micros(point.micros))</title></circle>"
            }
            let summary =
                "p50 \(Formatting.micros(line.0.p50Micros)) · p99 \(Formatting.micros(line.0.p99Micros))"
                + " · p99.9 \(Formatting.micros(line.0.p999Micros))"
            svg += "<text x=\"0\" y=\"\(n(30 + Double(index) * 14))\" style=\"fill:\(line.1)\">"
            let label = line.2.count > 40 ? String(line.2.prefix(39)) + "…" : line.2
            svg += escape(label + ": " + summary) + "</text>\n"
        }
        return svg + "</svg>\n"
    }

    private func runsTable(_ comparisons: [Comparison]) -> String {
        var html = "<details><summary>every run</summary><table><tr><th>measure</th><th>side</th><th>what ran</th>"
        html += "<th>runs</th><th>median</th></tr>\n"
        for comparison in comparisons {
            for (side, series) in [("CardVault", comparison.subject), ("anchor", comparison.anchor)] {
                guard let series else { continue }
                html += "<tr><td>\(escape(comparison.name))</td><td>\(side)</td><td>\(escape(series.label))</td>"
                html += "<td class=\"n\">\(series.runs.map(Formatting.rate).joined(separator: ", "))</td>"
                html += "<td class=\"n\">\(Formatting.rate(series.median)) \(escape(comparison.unit))</td></tr>\n"
            }
        }
        return html + "</table></details>\n"
    }

    private func text(_ content: String, x: Double, y: Double, muted: Bool = false) -> String {
        let style = muted ? " style=\"fill:#888\"" : ""
        return "<text x=\"\(n(x))\" y=\"\(n(y))\"\(style)>\(escape(content))</text>\n"
    }

    private func n(_ value: Double) -> String { Formatting.fixed(value, decimals: 1) }

    private func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
