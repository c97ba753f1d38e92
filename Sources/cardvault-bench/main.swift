import Foundation

// cardvault-bench: the tokenization benchmark suite. See `cardvault-bench --help` and bench/README.md.

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(BenchOptions.usage)
    exit(0)
}
let options: BenchOptions
do {
    options = try BenchOptions.parse(arguments)
} catch let error as BenchUsageError {
    FileHandle.standardError.write(Data("cardvault-bench: \(error.reason)\n".utf8))
    exit(64)
}
if options.list {
    for suite in SuiteCatalog.all { print(suite.name.padding(toLength: 10, withPad: " ", startingAt: 0) + suite.title) }
    exit(0)
}
let selected = SuiteCatalog.all.filter { options.selects($0.name) }
if selected.isEmpty {
    FileHandle.standardError.write(Data("cardvault-bench: no suite matches \(options.filters)\n".utf8))
    exit(64)
}
signal(SIGPIPE, SIG_IGN)

let progress = ProgressDisplay()
let started = Date()
progress.line("cardvault-bench: \(selected.map(\.name).joined(separator: ", "))\(options.quick ? " (quick)" : "")")
progress.step("collecting machine facts")
let machine = MachineFacts.collect()
progress.line("machine: \(machine.cpuModel), \(machine.cores) cores, kernel \(machine.kernel)")
let context = SuiteContext(options: options, progress: progress)
var reports: [SuiteReport] = []
for (index, suite) in selected.enumerated() {
    context.suiteName = "[\(index + 1)/\(selected.count)] \(suite.name)"
    progress.step("\(context.suiteName) starting")
    let suiteStart = Date()
    var notes: [String] = []
    var comparisons: [Comparison] = []
    do {
        comparisons = try suite.run(in: context, notes: &notes)
    } catch {
        notes.append("suite failed: \(error)")
    }
    let seconds = Date().timeIntervalSince(suiteStart)
    reports.append(
        SuiteReport(name: suite.name, title: suite.title, comparisons: comparisons, notes: notes, seconds: seconds))
    progress.line("\(suite.name): done in \(Formatting.fixed(seconds, decimals: 1)) s")
}
context.removeTemporaryDirectories()
progress.clear()

let report = RunReport(
    machine: machine, quick: options.quick, filters: options.filters, suites: reports,
    seconds: Date().timeIntervalSince(started))
print("")
print(ResultTable(suites: reports).render())
for suite in reports {
    for note in suite.notes { print("\(suite.name): \(note)") }
}
do {
    let json = try report.writeJSON(into: options.resultsDirectory ?? options.root + "/bench/results", started: started)
    let html = options.reportPath ?? options.root + "/bench/report.html"
    try HTMLReport(report: report).write(to: html)
    print("\nresults: \(json)\nreport:  \(html)\ntotal:   \(Formatting.fixed(report.seconds, decimals: 1)) s")
} catch {
    FileHandle.standardError.write(Data("cardvault-bench: cannot write results: \(error)\n".utf8))
    exit(1)
}
