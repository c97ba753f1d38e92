import Foundation

/// Everything a run produced: the machine, the options and every suite's figures. Written as
/// `bench/results/<timestamp>.json` and rendered as `bench/report.html`.
struct RunReport: Codable, Sendable {
    var schema = 1
    var machine: MachineFacts
    var quick: Bool
    var filters: [String]
    var suites: [SuiteReport]
    var seconds: Double

    /// Writes the report as pretty-printed JSON into `directory`, named for the run's start time;
    /// returns the path.
    func writeJSON(into directory: String, started: Date) throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        let path = directory + "/" + formatter.string(from: started) + ".json"
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan"
        )
        try encoder.encode(self).write(to: URL(fileURLWithPath: path))
        return path
    }
}
