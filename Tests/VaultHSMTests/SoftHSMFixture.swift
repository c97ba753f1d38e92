import Foundation
import VaultCrypto

/// SoftHSM2 tokens for this test process, in a temporary directory of their own.
///
/// SoftHSM reads its configuration (`SOFTHSM2_CONF`) when the module is initialized, so the fixture sets it
/// before any test loads the module and initializes every token the tests use up front. Without Debian's
/// `softhsm2` the tests fail with a message that says so (`make test` installs it).
struct SoftHSMFixture: Sendable {
    /// Where Debian's softhsm2 puts the module.
    static let modulePath = "/usr/lib/softhsm/libsofthsm2.so"
    /// The token most tests use, each with key labels of its own.
    static let tokenLabel = "cardvault-test"
    /// A token nobody logs in to but the wrong-PIN test (a logged-in token does not check a PIN again).
    static let pinTokenLabel = "cardvault-pin"
    static let userPIN = "1234"

    /// The fixture, made once per process.
    static let shared = Result { try SoftHSMFixture() }

    let directory: URL

    private init() throws {
        guard FileManager.default.fileExists(atPath: Self.modulePath) else {
            throw FixtureError(
                "SoftHSM2's PKCS#11 module is not at \(Self.modulePath): install Debian's softhsm2 "
                    + "(apt-get install softhsm2; `make test` does)")
        }
        guard let utility = Self.findUtility() else {
            throw FixtureError(
                "softhsm2-util is not on PATH: install Debian's softhsm2 (apt-get install softhsm2; `make test` does)")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cardvault-softhsm-\(UUID())")
        let tokens = directory.appendingPathComponent("tokens")
        try FileManager.default.createDirectory(at: tokens, withIntermediateDirectories: true)
        let configuration = directory.appendingPathComponent("softhsm2.conf")
        try "directories.tokendir = \(tokens.path)\nobjectstore.backend = file\nlog.level = ERROR\n"
            .write(to: configuration, atomically: true, encoding: .utf8)
        setenv("SOFTHSM2_CONF", configuration.path, 1)
        // The tokens go with the process (the closure cannot capture: it finds them through the variable).
        atexit {
            guard let path = getenv("SOFTHSM2_CONF").map({ String(cString: $0) }),
                path.contains("/cardvault-softhsm-")
            else { return }
            try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent)
        }
        for label in [Self.tokenLabel, Self.pinTokenLabel] {
            try Self.run(
                utility,
                ["--init-token", "--free", "--label", label, "--pin", Self.userPIN, "--so-pin", "5678"])
        }
    }

    /// The user PIN as the API takes it.
    static var pin: SecureBytes { SecureBytes(copying: Array(userPIN.utf8)) }

    /// A key label no other test uses.
    static func uniqueKeyLabel(_ name: String) -> String { "\(name)-\(UUID())" }

    private static func findUtility() -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return (path.split(separator: ":") + ["/usr/bin"]).lazy
            .map { URL(fileURLWithPath: String($0)).appendingPathComponent("softhsm2-util") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    private static func run(_ executable: URL, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw FixtureError("softhsm2-util \(arguments.first ?? "") failed (\(process.terminationStatus)): \(text)")
        }
    }
}

struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
