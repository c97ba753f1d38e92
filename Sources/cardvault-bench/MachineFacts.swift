import Foundation

/// The machine a run happened on, kept with its figures.
struct MachineFacts: Codable, Sendable {
    var cpuModel: String
    var cores: Int
    var memoryBytes: UInt64
    var kernel: String
    var swiftVersion: String
    var opensslVersion: String
    var nginxVersion: String
    var wrkVersion: String
    var postgresVersion: String
    var date: String
    var hostname: String

    /// Reads the facts from /proc, uname and the tools' version outputs.
    static func collect() -> MachineFacts {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let meminfo = (try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8)) ?? ""
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let memoryKiB = field("MemTotal", in: meminfo).split(separator: " ").first.flatMap { UInt64($0) } ?? 0
        return MachineFacts(
            cpuModel: field("model name", in: cpuinfo),
            cores: ProcessInfo.processInfo.activeProcessorCount,
            memoryBytes: memoryKiB * 1024,
            kernel: release,
            swiftVersion: firstLine(of: ["swift", "--version"]),
            opensslVersion: firstLine(of: ["openssl", "version"]),
            nginxVersion: firstLine(of: ["nginx", "-v"]),
            wrkVersion: firstLine(of: ["wrk", "-v"]),
            postgresVersion: firstLine(of: [PostgresCluster.binaries + "/postgres", "--version"]),
            date: ISO8601DateFormatter().string(from: Date()),
            hostname: ProcessInfo.processInfo.hostName
        )
    }

    private static func field(_ key: String, in text: String) -> String {
        for line in text.split(separator: "\n") where line.hasPrefix(key) {
            if let colon = line.firstIndex(of: ":") {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return "unknown"
    }

    private static func firstLine(of command: [String]) -> String {
        guard let outcome = try? ChildProcess.run(command[0], Array(command.dropFirst()), timeout: 20) else {
            return "not installed"
        }
        let text = outcome.stdout.isEmpty ? outcome.stderr : outcome.stdout
        let line = text.split(separator: "\n").first.map(String.init) ?? "unknown"
        return line.trimmingCharacters(in: .whitespaces)
    }
}
