/// Header fields in arrival order, looked up case-insensitively.
///
/// Printing a value of this type (`description`, interpolation, `dump`) masks credentials: the
/// values of `Authorization`, `Cookie` and similar headers show as `[REDACTED]`, and any run of
/// twelve or more digits elsewhere (in names too: `4970101111111119` is a valid header name) is
/// masked, so headers can never carry a bearer token or a PAN into a log line.
public struct HTTPHeaders: Sendable, Sequence, CustomStringConvertible, CustomReflectable,
    ExpressibleByDictionaryLiteral
{
    /// One header field.
    public struct Field: Sendable, Hashable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public private(set) var fields: [Field]

    public init() { fields = [] }

    /// Room for `count` fields before the storage grows (the server reserves it once per request).
    mutating func reserveCapacity(_ count: Int) { fields.reserveCapacity(count) }

    public init(_ pairs: [(String, String)]) {
        fields = pairs.map { Field(name: $0.0, value: $0.1) }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// The first value of `name` (case-insensitive), if present.
    public subscript(name: String) -> String? {
        for field in fields where Self.sameName(field.name, name) { return field.value }
        return nil
    }

    /// Every value of `name`, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { Self.sameName($0.name, name) }.map(\.value)
    }

    /// Appends a field (keeps any existing ones of the same name).
    public mutating func add(_ name: String, _ value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces every field called `name` with one field.
    public mutating func set(_ name: String, _ value: String) {
        fields.removeAll { Self.sameName($0.name, name) }
        fields.append(Field(name: name, value: value))
    }

    /// Removes every field called `name`.
    public mutating func remove(_ name: String) {
        fields.removeAll { Self.sameName($0.name, name) }
    }

    public func contains(_ name: String) -> Bool { self[name] != nil }

    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// Header names whose values are credentials and never printed.
    public static let credentialHeaders: Set<String> = [
        "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "x-access-key",
    ]

    public var description: String {
        var text = "["
        for (index, field) in fields.enumerated() {
            if index > 0 { text += ", " }
            text += LogScrubber.maskDigitRuns(field.name) + ": " + Self.printable(field)
        }
        return text + "]"
    }

    public var customMirror: Mirror {
        Mirror(
            self,
            children: fields.map { (label: LogScrubber.maskDigitRuns($0.name), value: Self.printable($0) as Any) },
            displayStyle: .dictionary)
    }

    static func printable(_ field: Field) -> String {
        if credentialHeaders.contains(field.name.lowercased()) { return "[REDACTED]" }
        return LogScrubber.maskDigitRuns(field.value)
    }

    /// Whether two field names are the same, ignoring ASCII case (field names are tokens, RFC 9110 5.1), without
    /// making lower-case copies.
    static func sameName(_ lhs: String, _ rhs: String) -> Bool {
        guard lhs.utf8.count == rhs.utf8.count else { return false }
        // Native and small strings hold their UTF-8 contiguously: compared in place, a byte at a time.
        let inPlace = lhs.utf8.withContiguousStorageIfAvailable { left in
            rhs.utf8.withContiguousStorageIfAvailable { right in sameName(left, right) }
        }
        if let inPlace, let same = inPlace { return same }
        return sameName(Array(lhs.utf8), Array(rhs.utf8))
    }

    private static func sameName(
        _ left: some RandomAccessCollection<UInt8>, _ right: some RandomAccessCollection<UInt8>
    ) -> Bool {
        for (a, b) in zip(left, right) where a != b {
            guard a | 0x20 == b | 0x20, (a | 0x20) >= UInt8(ascii: "a"), (a | 0x20) <= UInt8(ascii: "z") else {
                return false
            }
        }
        return true
    }
}
