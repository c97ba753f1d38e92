/// Masks free text before it reaches a log line, as a second line of defence behind typed
/// redaction (``VaultCore/Redacted``): any run of twelve or more digits (possibly split by spaces or
/// dashes, the way card numbers are written) becomes `X`s, so a PAN pasted into a path, a header or
/// an error message cannot be logged whole.
public enum LogScrubber {
    /// The shortest digit run that is masked (the shortest card numbers have 12 digits).
    public static let minimumRun = 12

    /// Returns `text` with every run of at least ``minimumRun`` digits replaced by `X`s.
    public static func maskDigitRuns(_ text: String) -> String {
        var digits = 0
        var hasLongRun = false
        for byte in text.utf8 {
            if byte >= 0x30 && byte <= 0x39 {
                digits += 1
                if digits >= minimumRun {
                    hasLongRun = true
                    break
                }
            } else if byte != 0x20 && byte != 0x2D {
                digits = 0
            }
        }
        guard hasLongRun else { return text }
        var bytes = Array(text.utf8)
        var start = 0
        while start < bytes.count {
            guard bytes[start] >= 0x30 && bytes[start] <= 0x39 else {
                start += 1
                continue
            }
            var end = start
            var count = 0
            var lastDigit = start
            while end < bytes.count {
                let byte = bytes[end]
                if byte >= 0x30 && byte <= 0x39 {
                    count += 1
                    lastDigit = end
                } else if byte != 0x20 && byte != 0x2D {
                    break
                }
                end += 1
            }
            if count >= minimumRun {
                for index in start...lastDigit where bytes[index] >= 0x30 && bytes[index] <= 0x39 {
                    bytes[index] = 0x58  // "X"
                }
            }
            start = end
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
