import Foundation

/// Bad usage of `cardvault-bench`: printed as one line, exit status 64.
struct BenchUsageError: Error {
    var reason: String
}

/// The command line of `cardvault-bench`.
struct BenchOptions {
    /// Suite names to run (all when empty); a name matches a suite whose name contains it.
    var filters: [String] = []
    /// A smoke run of a few seconds per suite.
    var quick = false
    /// Where results, the report and the C baselines live (the repository root).
    var root: String = FileManager.default.currentDirectoryPath
    /// Where JSON results go (default `bench/results`).
    var resultsDirectory: String?
    /// The HTML report's path (default `bench/report.html`).
    var reportPath: String?
    /// Lists the suites and exits.
    var list = false
    /// Records a perf profile of the daemon during the tokenization runs and prints its top frames.
    var profile = false

    static let usage = """
        usage: cardvault-bench [SUITE ...] [--filter NAME] [--quick] [--root DIR] [--results DIR] \
        [--report FILE] [--list] [--profile]

        Runs the tokenization benchmark suites side by side with their anchors, prints a table of
        medians and ratios, writes bench/results/<timestamp>.json and bench/report.html.
          SUITE, --filter NAME   run only suites whose name contains NAME (repeatable)
          --quick                a smoke run of a few seconds per suite
          --root DIR             the repository root (default: the current directory)
          --results DIR          where JSON results go (default: ROOT/bench/results)
          --report FILE          the HTML report (default: ROOT/bench/report.html)
          --list                 list the suites and exit
          --profile              record a perf profile (cpu-clock) of the daemon during the HTTP suite's
                                 tokenization runs and print its top frames (needs perf)
        """

    /// Parses `arguments` (without the program name).
    static func parse(_ arguments: [String]) throws -> BenchOptions {
        var options = BenchOptions()
        var index = 0
        func value(_ name: String) throws -> String {
            index += 1
            guard index < arguments.count, !arguments[index].hasPrefix("--") else {
                throw BenchUsageError(reason: "\(name) needs a value")
            }
            return arguments[index]
        }
        while index < arguments.count {
            let word = arguments[index]
            var name = word
            var inline: String?
            if word.hasPrefix("--"), let equals = word.firstIndex(of: "=") {
                name = String(word[..<equals])
                inline = String(word[word.index(after: equals)...])
            }
            switch name {
            case "--quick": options.quick = true
            case "--list": options.list = true
            case "--profile": options.profile = true
            case "--filter": options.filters.append(try inline ?? value(name))
            case "--root": options.root = try inline ?? value(name)
            case "--results": options.resultsDirectory = try inline ?? value(name)
            case "--report": options.reportPath = try inline ?? value(name)
            default:
                if word.hasPrefix("-") { throw BenchUsageError(reason: "unknown option \(word)") }
                options.filters.append(word)
            }
            index += 1
        }
        return options
    }

    /// True when the suite named `name` is selected by the filters.
    func selects(_ name: String) -> Bool {
        filters.isEmpty || filters.contains { name.localizedCaseInsensitiveContains($0) }
    }
}
