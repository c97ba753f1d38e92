public import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Writes one JSON object per line: `{"time":"…","level":"info","msg":"…",…metadata}`.
///
/// Lines are built by hand (no `JSONSerialization`) and written with one `write(2)` each, so lines
/// from concurrent threads never interleave.
public struct JSONLineLogHandler: LogHandler {
    private let fileDescriptor: Int32

    /// - Parameter fileDescriptor: where lines go; standard error by default.
    public init(fileDescriptor: Int32 = 2) {
        self.fileDescriptor = fileDescriptor
    }

    public func write(_ record: LogRecord) {
        var bytes = Self.renderBytes(record)
        bytes.append(0x0A)
        Self.writeFully(bytes, to: fileDescriptor)
    }

    /// Writes every byte to `fileDescriptor`, looping over short writes; gives up on an error (a log
    /// line is never worth blocking or crashing for).
    static func writeFully(_ bytes: [UInt8], to fileDescriptor: Int32) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(fileDescriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }

    /// Renders a record as one JSON object (no trailing newline).
    public static func render(_ record: LogRecord) -> String {
        String(decoding: renderBytes(record), as: UTF8.self)
    }

    /// Renders a record as the UTF-8 bytes of one JSON object (no trailing newline), straight into
    /// one buffer: this runs once per request, so it avoids intermediate strings.
    public static func renderBytes(_ record: LogRecord) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(96 + record.message.utf8.count + record.metadata.count * 40)
        out.append(contentsOf: #"{"time":""#.utf8)
        ISO8601Timestamp.append(record.time, to: &out)
        out.append(contentsOf: #"","level":"#.utf8)
        JSONText.appendString(record.level.description, to: &out)
        out.append(contentsOf: #","msg":"#.utf8)
        JSONText.appendString(record.message, to: &out)
        let fields = record.metadata.sorted { $0.key < $1.key }
        for (key, value) in fields {
            out.append(0x2C)  // ,
            JSONText.appendString(key, to: &out)
            out.append(0x3A)  // :
            switch value {
            case .string(let text), .redacted(let text): JSONText.appendString(text, to: &out)
            case .int(let value): JSONText.appendInteger(Int64(value), to: &out)
            case .double(let value): out.append(contentsOf: (value.isFinite ? String(value) : "null").utf8)
            case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
            }
        }
        out.append(0x7D)  // }
        return out
    }
}

/// Minimal JSON text helpers for hand-built output on hot paths.
public enum JSONText {
    /// Appends `text` as a quoted, escaped JSON string to a byte buffer.
    public static func appendString(_ text: String, to out: inout [UInt8]) {
        out.append(0x22)
        var text = text
        text.withUTF8 { bytes in
            var clean = 0
            var index = 0
            while index < bytes.count {
                // Eight bytes at a time while none needs escaping (most text), then byte by byte.
                if index + 8 <= bytes.count,
                    !needsEscape(UnsafeRawPointer(bytes.baseAddress! + index).loadUnaligned(as: UInt64.self))
                {
                    index += 8
                    continue
                }
                let byte = bytes[index]
                index += 1
                guard byte < 0x20 || byte == 0x22 || byte == 0x5C else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[clean..<index - 1]))
                switch byte {
                case 0x22: out.append(contentsOf: [0x5C, 0x22])
                case 0x5C: out.append(contentsOf: [0x5C, 0x5C])
                case 0x0A: out.append(contentsOf: [0x5C, 0x6E])
                case 0x0D: out.append(contentsOf: [0x5C, 0x72])
                case 0x09: out.append(contentsOf: [0x5C, 0x74])
                default:
                    let hex: [UInt8] = Array("0123456789abcdef".utf8)
                    out.append(contentsOf: [0x5C, 0x75, 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
                }
                clean = index
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[clean...]))
        }
        out.append(0x22)
    }

    /// Whether one of the eight bytes of `word` is a control character, `"` or `\`. Each test is the classic "has a
    /// byte below n" one, `(word - n in each byte) & ~word & 0x80 in each byte`, exact for the word as a whole
    /// (`"` and `\` as "below 1" after an XOR).
    @inline(__always)
    static func needsEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let control = (word &- ones &* 0x20) & ~word
        let quotes = (quote &- ones) & ~quote
        let backslashes = (backslash &- ones) & ~backslash
        return (control | quotes | backslashes) & highBits != 0
    }

    /// Appends the decimal digits of `value`.
    public static func appendInteger(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(0x2D) }
        var magnitude = value.magnitude
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[19 - count] = 0x30 + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[(20 - count)...]))
        }
    }

    /// Appends `text` as a quoted, escaped JSON string.
    public static func appendString(_ text: String, to out: inout String) {
        out.append("\"")
        var needsEscape = false
        for byte in text.utf8 where byte < 0x20 || byte == 0x22 || byte == 0x5C {
            needsEscape = true
            break
        }
        if !needsEscape {
            out.append(text)
        } else {
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": out.append("\\\"")
                case "\\": out.append("\\\\")
                case "\n": out.append("\\n")
                case "\r": out.append("\\r")
                case "\t": out.append("\\t")
                case _ where scalar.value < 0x20:
                    let hex = String(scalar.value, radix: 16)
                    out.append("\\u" + String(repeating: "0", count: 4 - hex.count) + hex)
                default: out.unicodeScalars.append(scalar)
                }
            }
        }
        out.append("\"")
    }
}

/// RFC 3339 UTC timestamps with milliseconds, formatted without `DateFormatter`.
public enum ISO8601Timestamp {
    public static func format(_ date: Date) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(24)
        append(date, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `date` as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC) to a byte buffer.
    public static func append(_ date: Date, to out: inout [UInt8]) {
        let millis = date.millisecondsSince1970
        let seconds = millis / 1000
        let ms = Int(millis - seconds * 1000)
        let parts = UTCDateParts(unixSeconds: seconds)
        let (year, month, day, secondOfDay) = (parts.year, parts.month, parts.day, parts.secondOfDay)
        func digits(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                out.append(0x30 + UInt8((rest / divisor) % 10))
                rest %= divisor
                divisor /= 10
            }
        }
        digits(year, 4)
        out.append(0x2D)
        digits(month, 2)
        out.append(0x2D)
        digits(day, 2)
        out.append(0x54)  // T
        digits(secondOfDay / 3600, 2)
        out.append(0x3A)
        digits(secondOfDay / 60 % 60, 2)
        out.append(0x3A)
        digits(secondOfDay % 60, 2)
        out.append(0x2E)
        digits(ms, 3)
        out.append(0x5A)  // Z
    }
}
