/// The shape every CardVault error follows: an opaque code, a message safe to show, an optional
/// underlying cause (kept for the log only), and where it was thrown. Equal by code.
public protocol CodedError: Error, CustomStringConvertible {
    associatedtype Code: Hashable & Sendable
    var code: Code { get }
    var message: String { get }
}

extension CodedError {
    public var description: String { message }
}

/// Where an error was thrown, for logs.
public struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
    public var file: String
    public var line: Int

    public init(file: String = #fileID, line: Int = #line) {
        self.file = file
        self.line = line
    }

    public var description: String { "\(file):\(line)" }
}
