import CardKit
import Foundation

/// `cardvault inspect`: reads card numbers from standard input, one per line, and writes one JSON object per line
/// with the brand, candidate brands, Luhn and length results and the alias. Never prints a full number.
enum InspectCommand: Command {
    static let name = "inspect"
    static let summary = "check card numbers read from standard input: brand, Luhn, length, alias"
    static let help = """
        usage: cardvault inspect < numbers.txt

        Reads card numbers from standard input, one per line (spaces and dashes are ignored), and writes one JSON
        object per input line:
          {"brand": "visa", "candidates": ["visa"], "luhn": true, "lengthValid": true, "valid": true,
           "alias": "497010XXXXXX1119", "securityCode": {"name": "CVV", "size": 3}}
        A line that is not a valid card number gives "valid": false and an "error" code (invalidCharacter,
        invalidLength, luhnFailed, unknownBrand); processing continues. For a partial number, "candidates" lists
        the brands it may still turn out to be. The full number is never printed; "alias" (first six, X, last
        four) appears only for lines of 12 to 19 digits.

        Card numbers are never taken from arguments, which end up in shell history.
        Exit status: 0, or 74 when standard input cannot be read.
        """

    /// Lines longer than this are reported as invalidLength without being kept.
    static let maximumLineLength = 256

    static func run(_ arguments: inout Arguments) async throws -> Int32 {
        guard arguments.remaining.isEmpty else {
            // Never echo the arguments: someone may have typed a card number there.
            throw UsageError("inspect takes no arguments; it reads card numbers from standard input, one per line")
        }
        var reader = LineReader(fileDescriptor: 0, maximumLineLength: maximumLineLength)
        var output = [UInt8]()
        output.reserveCapacity(1 << 16)
        let interactive = isatty(1) != 0
        while let line = try reader.nextLine() {
            let json =
                line.overlong ? describeOverlongLine() : line.bytes.withUnsafeBufferPointer { describe(line: $0) }
            output.append(contentsOf: json.utf8)
            output.append(0x0A)
            if interactive || output.count >= 1 << 15 { try flush(&output) }
        }
        try flush(&output)
        return 0
    }

    /// The JSON object for one input line (without the newline).
    static func describe(line: UnsafeBufferPointer<UInt8>) -> String {
        var digits = [UInt8]()
        digits.reserveCapacity(line.count)
        defer {
            // Do not leave the number in freed memory longer than needed.
            for index in digits.indices { digits[index] = 0 }
        }
        for byte in line {
            if byte == 0x20 || byte == 0x2D { continue }
            guard byte &- 0x30 < 10 else {
                return object(
                    brand: nil, candidates: [], luhn: false, lengthValid: false,
                    failure: .invalidCharacter, alias: nil)
            }
            digits.append(byte)
        }
        let check = digits.withUnsafeBufferPointer { CardNumberCheck(asciiDigits: $0) }
        let candidates = BrandCatalog.standard.candidates(forPrefix: String(decoding: digits, as: UTF8.self))
        var alias: String?
        if (CardNumberCheck.minimumLength...CardNumberCheck.maximumLength).contains(digits.count) {
            alias =
                String(decoding: digits[..<6], as: UTF8.self)
                + String(repeating: "X", count: digits.count - 10)
                + String(decoding: digits[(digits.count - 4)...], as: UTF8.self)
        }
        return object(
            brand: check.brand, candidates: candidates, luhn: check.luhnValid,
            lengthValid: check.lengthValid, failure: check.failure, alias: alias)
    }

    static func describeOverlongLine() -> String {
        object(brand: nil, candidates: [], luhn: false, lengthValid: false, failure: .invalidLength, alias: nil)
    }

    /// Writes the fields in the documented order. Every string written is a brand id, an error code, a security
    /// code name or an alias of digits and X, so none needs escaping.
    private static func object(
        brand: CardBrand?, candidates: [CardBrand], luhn: Bool, lengthValid: Bool,
        failure: CardValidationError.Code?, alias: String?
    ) -> String {
        var json = "{\"brand\": " + (brand.map { "\"" + $0.id + "\"" } ?? "null")
        json += ", \"candidates\": [" + candidates.map { "\"" + $0.id + "\"" }.joined(separator: ", ") + "]"
        json += ", \"luhn\": " + (luhn ? "true" : "false")
        json += ", \"lengthValid\": " + (lengthValid ? "true" : "false")
        json += ", \"valid\": " + (failure == nil ? "true" : "false")
        if let failure { json += ", \"error\": \"" + failure.description + "\"" }
        json += ", \"alias\": " + (alias.map { "\"" + $0 + "\"" } ?? "null")
        if let code = brand?.securityCode {
            json += ", \"securityCode\": {\"name\": \"" + code.name + "\", \"size\": " + String(code.size) + "}}"
        } else {
            json += ", \"securityCode\": null}"
        }
        return json
    }

    private static func flush(_ output: inout [UInt8]) throws {
        var offset = 0
        while offset < output.count {
            let written = output.withUnsafeBytes { write(1, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                throw CommandFailure("cannot write standard output", status: 74)
            }
            offset += written
        }
        output.removeAll(keepingCapacity: true)
    }
}

/// Reads lines from a file descriptor with `read(2)`, so that a read error is reported rather than taken for the
/// end of input. Strips the newline and a carriage return before it.
struct LineReader {
    struct Line {
        var bytes: [UInt8]
        /// The line was longer than the limit; `bytes` holds only its start.
        var overlong: Bool
    }

    let fileDescriptor: Int32
    let maximumLineLength: Int
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var start = 0
    private var end = 0
    private var finished = false

    init(fileDescriptor: Int32, maximumLineLength: Int) {
        self.fileDescriptor = fileDescriptor
        self.maximumLineLength = maximumLineLength
    }

    /// The next line, or nil at the end of input.
    /// - Throws: ``CommandFailure`` (status 74) when standard input cannot be read.
    mutating func nextLine() throws -> Line? {
        var line = Line(bytes: [], overlong: false)
        var sawAny = false
        while true {
            if start == end {
                if finished { return sawAny ? finish(line) : nil }
                try refill()
                continue
            }
            sawAny = true
            let byte = buffer[start]
            start += 1
            if byte == 0x0A { return finish(line) }
            if line.bytes.count < maximumLineLength {
                line.bytes.append(byte)
            } else {
                line.overlong = true
            }
        }
    }

    private func finish(_ line: Line) -> Line {
        var line = line
        if !line.overlong, line.bytes.last == 0x0D { line.bytes.removeLast() }
        return line
    }

    private mutating func refill() throws {
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fileDescriptor, $0.baseAddress!, $0.count) }
            if count > 0 {
                start = 0
                end = count
                return
            }
            if count == 0 {
                finished = true
                return
            }
            if errno == EINTR { continue }
            throw CommandFailure("cannot read standard input", status: 74)
        }
    }
}
