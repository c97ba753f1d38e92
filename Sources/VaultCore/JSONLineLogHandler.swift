import Foundation

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
        var line = Self.render(record)
        line.append("\n")
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { buffer in
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
        var out = "{\"time\":"
        JSONText.appendString(ISO8601Timestamp.format(record.time), to: &out)
        out += ",\"level\":"
        JSONText.appendString(record.level.description, to: &out)
        out += ",\"msg\":"
        JSONText.appendString(record.message, to: &out)
        for key in record.metadata.keys.sorted() {
            out += ","
            JSONText.appendString(key, to: &out)
            out += ":"
            switch record.metadata[key]! {
            case .string(let text), .redacted(let text): JSONText.appendString(text, to: &out)
            case .int(let value): out += String(value)
            case .double(let value): out += value.isFinite ? String(value) : "null"
            case .bool(let value): out += value ? "true" : "false"
            }
        }
        out += "}"
        return out
    }
}

/// Minimal JSON text helpers for hand-built output on hot paths.
public enum JSONText {
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
        let millis = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let seconds = millis / 1000
        let ms = Int(millis - seconds * 1000)
        var tmValue = tm()
        var time = time_t(seconds)
        gmtime_r(&time, &tmValue)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
        }
        return pad(tmValue.tm_year + 1900, 4) + "-" + pad(tmValue.tm_mon + 1, 2) + "-" + pad(tmValue.tm_mday, 2) + "T"
            + pad(tmValue.tm_hour, 2) + ":" + pad(tmValue.tm_min, 2) + ":" + pad(tmValue.tm_sec, 2) + "."
            + pad(Int32(ms), 3) + "Z"
    }
}
