/// A record type's binary codec from one description: its fields, each a tag and a key path. Encoding writes the
/// fields in the listed order (absent optionals are left out); decoding starts from ``binaryBlank``, sets each
/// field it meets (skipping unknown tags), and fails when a required field (non-optional, not defaulted) is
/// missing. Tags are fixed forever: a field that goes away leaves its tag unused, a new field takes a new tag and
/// is optional or defaulted, so that records written before it still decode.
public protocol BinarySchema: BinaryFields {
    static var binaryFields: [BinaryField<Self>] { get }
    /// The value decoding starts from: every required field is overwritten, the others keep their blank value.
    static var binaryBlank: Self { get }
}

extension BinarySchema {
    @inlinable
    public func encode(to writer: inout BinaryRecordWriter) {
        for field in Self.binaryFields { field.encode(self, &writer) }
    }

    @inlinable
    public init(from reader: inout BinaryRecordReader) throws {
        let fields = Self.binaryFields
        var value = Self.binaryBlank
        // Fields usually come in the order listed: look at the next one first, then search.
        var expected = 0
        var seen: UInt64 = 0
        while let tag = try reader.next() {
            var index = expected < fields.count && fields[expected].tag == tag ? expected : -1
            if index < 0 {
                for (candidate, field) in fields.enumerated() where field.tag == tag {
                    index = candidate
                    break
                }
            }
            guard index >= 0 else {
                try reader.skip()
                continue
            }
            try fields[index].decode(&value, &reader)
            if index < 64 { seen |= 1 << UInt64(index) }
            expected = index + 1
        }
        for (index, field) in fields.enumerated()
        where field.isRequired && (index >= 64 || seen & (1 << UInt64(index)) == 0) {
            if index >= 64 { continue }  // more than 64 fields: the first 64 are checked
            throw BinaryRecordError("required field \(field.tag) of \(Self.self) is missing")
        }
        self = value
    }
}

/// One field of a ``BinarySchema``.
public struct BinaryField<Root>: Sendable {
    public let tag: Int
    public let isRequired: Bool
    public let encode: @Sendable (Root, inout BinaryRecordWriter) -> Void
    public let decode: @Sendable (inout Root, inout BinaryRecordReader) throws -> Void

    @inlinable
    public init(
        tag: Int, required: Bool, encode: @escaping @Sendable (Root, inout BinaryRecordWriter) -> Void,
        decode: @escaping @Sendable (inout Root, inout BinaryRecordReader) throws -> Void
    ) {
        self.tag = tag
        self.isRequired = required
        self.encode = encode
        self.decode = decode
    }

    public typealias Path<Value> = any WritableKeyPath<Root, Value> & Sendable

    @inlinable
    public static func string(_ tag: Int, _ path: Path<String>) -> Self {
        Self(
            tag: tag, required: true, encode: { $1.string(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.string() })
    }

    @inlinable
    public static func string(_ tag: Int, _ path: Path<String?>) -> Self {
        Self(
            tag: tag, required: false, encode: { $1.string(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.string() })
    }

    @inlinable
    public static func bytes(_ tag: Int, _ path: Path<[UInt8]>) -> Self {
        Self(
            tag: tag, required: true, encode: { $1.bytes(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.bytes() })
    }

    @inlinable
    public static func int(_ tag: Int, _ path: Path<Int64>) -> Self {
        Self(
            tag: tag, required: true, encode: { $1.int(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.int64() })
    }

    @inlinable
    public static func int(_ tag: Int, _ path: Path<Int64?>) -> Self {
        Self(
            tag: tag, required: false, encode: { $1.int(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.int64() })
    }

    /// An integer that decodes as `blank`'s value when absent (`required: false`), or must be there.
    @inlinable
    public static func int(_ tag: Int, _ path: Path<Int>, required: Bool = true) -> Self {
        Self(
            tag: tag, required: required, encode: { $1.int(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.int() })
    }

    @inlinable
    public static func int(_ tag: Int, _ path: Path<Int?>) -> Self {
        Self(
            tag: tag, required: false, encode: { $1.int(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.int() })
    }

    @inlinable
    public static func bool(_ tag: Int, _ path: Path<Bool>) -> Self {
        Self(
            tag: tag, required: true, encode: { $1.bool(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.bool() })
    }

    @inlinable
    public static func bool(_ tag: Int, _ path: Path<Bool?>) -> Self {
        Self(
            tag: tag, required: false, encode: { $1.bool(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.bool() })
    }

    /// A string enumeration, by its raw value (an unknown value is an error, not a default).
    @inlinable
    public static func raw<E: RawRepresentable & SendableMetatype>(_ tag: Int, _ path: Path<E>) -> Self
    where E.RawValue == String {
        Self(
            tag: tag, required: true, encode: { $1.string(tag, $0[keyPath: path].rawValue) },
            decode: {
                guard let value = E(rawValue: try $1.string()) else {
                    throw BinaryRecordError("field \(tag) holds an unknown value")
                }
                $0[keyPath: path] = value
            })
    }

    @inlinable
    public static func record<F: BinaryFields>(_ tag: Int, _ path: Path<F>) -> Self {
        Self(
            tag: tag, required: true, encode: { $1.record(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.record(F.self) })
    }

    @inlinable
    public static func record<F: BinaryFields>(_ tag: Int, _ path: Path<F?>) -> Self {
        Self(
            tag: tag, required: false, encode: { $1.record(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.record(F.self) })
    }

    /// A list, one field per element, in order.
    @inlinable
    public static func records<F: BinaryFields>(_ tag: Int, _ path: Path<[F]>) -> Self {
        Self(
            tag: tag, required: false,
            encode: { value, writer in
                for element in value[keyPath: path] { writer.record(tag, element) }
            },
            decode: { $0[keyPath: path].append(try $1.record(F.self)) })
    }

    /// A string map, one entry field per key, in key order.
    @inlinable
    public static func map(_ tag: Int, _ path: Path<[String: String]>) -> Self {
        Self(
            tag: tag, required: false, encode: { $1.map(tag, $0[keyPath: path]) },
            decode: { try $1.mapEntry(into: &$0[keyPath: path]) })
    }
}
