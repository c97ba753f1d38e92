/// Text made safe for HTML: every interpolated value of a server-rendered page goes through here.
enum HTMLText {
    /// Escapes `&`, `<`, `>`, `"` and `'` (safe in element content and in quoted attributes).
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
