import Foundation

/// nginx (Debian nginx-light) serving a fixed 64-byte body on a free loopback port, configured from
/// `bench/nginx/nginx.conf.template`, in a temporary prefix; stopped by ``stop()``.
final class NginxAnchor {
    let port: Int
    let version: String
    private let child: ChildProcess

    /// Starts nginx and waits until it accepts connections.
    init(context: SuiteContext) throws {
        let template = try String(
            contentsOfFile: context.benchDirectory + "/nginx/nginx.conf.template", encoding: .utf8)
        let prefix = try context.temporaryDirectory("nginx")
        chmod(prefix, 0o755)
        port = try LoopbackPort.free()
        let user = getuid() == 0 ? "nobody nogroup" : (ProcessInfo.processInfo.environment["USER"] ?? "nobody")
        let config =
            template
            .replacingOccurrences(of: "@PREFIX@", with: prefix)
            .replacingOccurrences(of: "@PORT@", with: String(port))
            .replacingOccurrences(of: "@WORKERS@", with: "auto")
            .replacingOccurrences(of: "@USER@", with: user)
        let path = prefix + "/nginx.conf"
        try config.write(toFile: path, atomically: false, encoding: .utf8)
        let nginx = ChildProcess.which("nginx") ?? "/usr/sbin/nginx"
        version =
            (try? ChildProcess.run(nginx, ["-v"]).stderr.trimmingCharacters(in: .whitespacesAndNewlines))
            ?? "nginx"
        child = try ChildProcess.start(nginx, ["-c", path, "-p", prefix, "-e", prefix + "/error.log"])
        let process = child
        try LoopbackPort.waitUntilAccepting(port, timeout: 10, what: "nginx") { process.isRunning }
    }

    /// The base URL, e.g. `http://127.0.0.1:41234`.
    var url: String { "http://127.0.0.1:\(port)" }

    /// Stops nginx (SIGTERM to the master, which stops its workers).
    func stop() { child.stop() }

    deinit { child.stop() }
}
