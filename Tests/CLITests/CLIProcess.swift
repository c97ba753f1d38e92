import Foundation

/// Runs the built `cardvault` binary and captures its output, as argument-parser's
/// `AssertExecuteCommand` does.
struct CLIResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

enum CLIProcess {
    /// The `cardvault` binary under test: `CARDVAULT_BIN` when set (`make test` points it at the release build,
    /// the binary `make run` starts), else the one next to the test bundle in the build directory.
    static var binary: URL {
        if let path = ProcessInfo.processInfo.environment["CARDVAULT_BIN"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        var url = Bundle.main.bundleURL
        // The xctest bundle (or swiftpm-testing-helper) lives in the build products directory.
        while !FileManager.default.fileExists(atPath: url.appendingPathComponent("cardvault").path) {
            let parent = url.deletingLastPathComponent()
            if parent == url { break }
            url = parent
        }
        return url.appendingPathComponent("cardvault")
    }

    /// Runs `cardvault` with `arguments`, feeding `stdin`, and waits for it (in `directory`, when
    /// given, else in this process's working directory).
    static func run(
        _ arguments: [String], stdin: String = "", environment: [String: String]? = nil, directory: String? = nil
    ) throws -> CLIResult {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        input.fileHandleForWriting.write(Data(stdin.utf8))
        try input.fileHandleForWriting.close()
        let outData = output.fileHandleForReading.readDataToEndOfFile()
        let errData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return CLIResult(
            status: process.terminationStatus,
            stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self)
        )
    }
}
