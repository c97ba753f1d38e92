/// Wraps a secret (a key, a bearer token, an access key, a CVX) so that every way of printing it,
/// `description`, `debugDescription`, string interpolation, `dump` and logging, shows
/// `[REDACTED]`. The wrapped value is reachable only through ``unsafeRevealed``.
public struct Redacted<Value: Sendable>: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable, LogRedactable
{
    private let value: Value

    public init(_ value: Value) { self.value = value }

    /// The secret itself. The name says what the caller takes on.
    public var unsafeRevealed: Value { value }

    public var description: String { "[REDACTED]" }
    public var debugDescription: String { "[REDACTED]" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
    public var redactedLogText: String { "[REDACTED]" }
}

extension Redacted: Equatable where Value: Equatable {}
extension Redacted: Hashable where Value: Hashable {}
