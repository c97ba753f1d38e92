import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A fresh directory under /tmp for one test (a data directory, a keys directory, config files), removed with
/// everything in it when the value goes away. Only `root` exists at first; `data` and `keys` are the
/// conventional places under it.
public final class TemporaryDirectory: Sendable {
    public let root: String
    public var data: String { root + "/data" }
    public var keys: String { root + "/keys" }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// - Parameter prefix: the start of the directory's name, to tell tests' leftovers apart.
    public init(prefix: String = "cv-test") throws {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw Failure(description: "mkdtemp failed: \(errno)") }
        root = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    /// Writes `text` to a file `name` under the root and returns its path.
    @discardableResult
    public func write(_ text: String, to name: String) throws -> String {
        let path = root + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }
}
