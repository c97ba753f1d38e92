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
    public func encode(to writer: inout BinaryRecordWriter) {
        for field in Self.binaryFields { field.encode(self, &writer) }
    }

    public init(from reader: inout BinaryRecordReader) throws {
        let fields = Self.binaryFields
        var value = Self.binaryBlank
        var seen = [Bool](repeating: false, count: fields.count)
        while let tag = try reader.next() {
            guard let index = fields.firstIndex(where: { $0.tag == tag }) else {
                try reader.skip()
                continue
            }
            try fields[index].decode(&value, &reader)
            seen[index] = true
        }
        for (index, field) in fields.enumerated() where field.isRequired && !seen[index] {
            throw BinaryRecordError("required field \(field.tag) of \(Self.self) is missing")
        }
        self = value
    }
}

/// One field of a ``BinarySchema``.
public struct BinaryField<Root>: Sendable {
    public let tag: Int
    let isRequired: Bool
    let encode: @Sendable (Root, inout BinaryRecordWriter) -> Void
    let decode: @Sendable (inout Root, inout BinaryRecordReader) throws -> Void

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

    public static func string(_ tag: Int, _ path: Path<String>) -> Self {
        Self(tag: tag, required: true, encode: { $1.string(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.string() })
    }

    public static func string(_ tag: Int, _ path: Path<String?>) -> Self {
        Self(tag: tag, required: false, encode: { $1.string(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.string() })
    }

    public static func bytes(_ tag: Int, _ path: Path<[UInt8]>) -> Self {
        Self(tag: tag, required: true, encode: { $1.bytes(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.bytes() })
    }

    public static func int(_ tag: Int, _ path: Path<Int64>) -> Self {
        Self(tag: tag, required: true, encode: { $1.int(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.int64() })
    }

    public static func int(_ tag: Int, _ path: Path<Int64?>) -> Self {
        Self(tag: tag, required: false, encode: { $1.int(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.int64() })
    }

    /// An integer that decodes as `blank`'s value when absent (`required: false`), or must be there.
    public static func int(_ tag: Int, _ path: Path<Int>, required: Bool = true) -> Self {
        Self(tag: tag, required: required, encode: { $1.int(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.int() })
    }

    public static func int(_ tag: Int, _ path: Path<Int?>) -> Self {
        Self(tag: tag, required: false, encode: { $1.int(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.int() })
    }

    public static func bool(_ tag: Int, _ path: Path<Bool>) -> Self {
        Self(tag: tag, required: true, encode: { $1.bool(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.bool() })
    }

    public static func bool(_ tag: Int, _ path: Path<Bool?>) -> Self {
        Self(tag: tag, required: false, encode: { $1.bool(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.bool() })
    }

    /// A string enumeration, by its raw value (an unknown value is an error, not a default).
    public static func raw<E: RawRepresentable & SendableMetatype>(_ tag: Int, _ path: Path<E>) -> Self where E.RawValue == String {
        Self(tag: tag, required: true, encode: { $1.string(tag, $0[keyPath: path].rawValue) },
            decode: {
                guard let value = E(rawValue: try $1.string()) else {
                    throw BinaryRecordError("field \(tag) holds an unknown value")
                }
                $0[keyPath: path] = value
            })
    }

    public static func record<F: BinaryFields>(_ tag: Int, _ path: Path<F>) -> Self {
        Self(tag: tag, required: true, encode: { $1.record(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.record(F.self) })
    }

    public static func record<F: BinaryFields>(_ tag: Int, _ path: Path<F?>) -> Self {
        Self(tag: tag, required: false, encode: { $1.record(tag, $0[keyPath: path]) },
            decode: { $0[keyPath: path] = try $1.record(F.self) })
    }

    /// A list, one field per element, in order.
    public static func records<F: BinaryFields>(_ tag: Int, _ path: Path<[F]>) -> Self {
        Self(tag: tag, required: false, encode: { value, writer in
                for element in value[keyPath: path] { writer.record(tag, element) }
            },
            decode: { $0[keyPath: path].append(try $1.record(F.self)) })
    }

    /// A string map, one entry field per key, in key order.
    public static func map(_ tag: Int, _ path: Path<[String: String]>) -> Self {
        Self(tag: tag, required: false, encode: { $1.map(tag, $0[keyPath: path]) },
            decode: { try $1.mapEntry(into: &$0[keyPath: path]) })
    }
}
