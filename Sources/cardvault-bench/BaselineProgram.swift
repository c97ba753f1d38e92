import Foundation

/// A C baseline the Makefile builds into `bench/.build/` (sources in `bench/c/`). Each prints one
/// JSON line describing its run.
struct BaselineProgram {
    let path: String

    /// The baseline named `name`, or the reason it cannot run (not built).
    static func named(_ name: String, in context: SuiteContext) -> Result<BaselineProgram, BenchFailure> {
        let path = context.baselineDirectory + "/" + name
        guard FileManager.default.isExecutableFile(atPath: path) else {
            return .failure(BenchFailure("C baseline \(name) not built (run `make bench`)"))
        }
        return .success(BaselineProgram(path: path))
    }

    /// Runs the baseline with `arguments` and decodes its JSON line as `T`.
    func run<T: Decodable>(_ arguments: [String], as type: T.Type, timeout: Double = 120) throws -> T {
        let outcome = try ChildProcess.check(path, arguments, timeout: timeout)
        guard let line = outcome.stdout.split(separator: "\n").last else {
            throw BenchFailure("\(path) printed nothing")
        }
        return try JSONDecoder().decode(T.self, from: Data(line.utf8))
    }
}
