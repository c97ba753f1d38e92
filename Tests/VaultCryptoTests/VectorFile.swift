import Foundation
import Testing

/// The shape of every vector file: where the vectors come from, and the cases.
struct VectorFileContent<Case: Decodable>: Decodable {
    var source: String
    var cases: [Case]
}

/// Loads a published known-answer vector file from the test bundle's `Vectors` folder.
enum VectorFile {
    static func load<Case: Decodable>(_ name: String, as: Case.Type) throws -> [Case] {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Vectors"))
        return try JSONDecoder().decode(VectorFileContent<Case>.self, from: Data(contentsOf: url)).cases
    }
}

extension Array where Element == UInt8 {
    /// Bytes from lower-case hex.
    init(hex: String) {
        var bytes: [UInt8] = []
        var iterator = hex.utf8.makeIterator()
        while let high = iterator.next(), let low = iterator.next() {
            bytes.append(UInt8(Self.nibble(high) << 4 | Self.nibble(low)))
        }
        self = bytes
    }

    private static func nibble(_ c: UInt8) -> Int {
        c >= 0x61 ? Int(c) - 0x61 + 10 : Int(c) - 0x30
    }

    var hex: String { map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() }
}
