import Foundation

/// Number formatting for the table and the report (no `String(format:)`).
enum Formatting {
    /// A rate with a k/M suffix and three significant figures: "912k", "1.23M", "3.78k", "41.0".
    static func rate(_ value: Double) -> String {
        let magnitude = abs(value)
        if magnitude >= 1e9 { return significant(value / 1e9) + "G" }
        if magnitude >= 1e6 { return significant(value / 1e6) + "M" }
        if magnitude >= 1e3 { return significant(value / 1e3) + "k" }
        return significant(value)
    }

    /// A duration given in microseconds: "850 µs", "1.23 ms", "4.10 s".
    static func micros(_ value: Double) -> String {
        if value >= 1e6 { return significant(value / 1e6) + " s" }
        if value >= 1e3 { return significant(value / 1e3) + " ms" }
        if value >= 1 { return significant(value) + " µs" }
        return significant(value * 1e3) + " ns"
    }

    /// A ratio: "0.87x", "12.3x".
    static func ratio(_ value: Double) -> String { significant(value) + "x" }

    /// Three significant figures (or the whole integer part when it is longer).
    static func significant(_ value: Double) -> String {
        let magnitude = abs(value)
        let decimals = magnitude >= 100 ? 0 : magnitude >= 10 ? 1 : 2
        return fixed(value, decimals: decimals)
    }

    /// `value` with exactly `decimals` decimals.
    static func fixed(_ value: Double, decimals: Int) -> String {
        guard value.isFinite else { return "–" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        let whole = Int(scaled / scale)
        let fraction = Int(scaled - Double(whole) * scale)
        var text = (value < 0 && scaled > 0 ? "-" : "") + String(whole)
        if decimals > 0 {
            let digits = String(fraction)
            text += "." + String(repeating: "0", count: decimals - digits.count) + digits
        }
        return text
    }
}
