import Foundation
public import OutboundHTTP

/// What a placeholder puts in: `{{card.<CardId>.<field>}}`.
public enum CardField: String, Sendable, Hashable, CaseIterable {
    /// The full card number, digits only.
    case number
    /// `MMYY`.
    case expiry
    /// `MM`.
    case expiryMonth = "expiry_month"
    /// Four digits (`2029`).
    case expiryYear = "expiry_year"
    /// The security code, while it is still held (its first use; it is wiped afterwards).
    case cvc
    /// The card holder's name as registered (empty when none).
    case holder
}

/// One placeholder: which card, which field.
public struct CardPlaceholder: Sendable, Hashable {
    public let cardId: String
    public let field: CardField
}

/// How substituted values are written into their context.
public enum TemplateEscaping: Sendable {
    /// As they are (digits; the holder's name in a plain body).
    case raw
    /// As the inside of a JSON string (`application/json` and `+json` bodies).
    case json
    /// Percent-encoded (`application/x-www-form-urlencoded` bodies).
    case form
}

/// A header value or body with its placeholders found: literal bytes and `{{card.<CardId>.<field>}}` parts.
/// Spaces are allowed inside the braces (`{{ card.card_1.number }}`). Text `{{` not followed by `card.` is
/// literal; a `{{card.` that does not complete a placeholder is an error, so a typo is never sent as is.
public struct ForwardTemplate: Sendable {
    enum Part: Sendable {
        case literal([UInt8])
        case placeholder(CardPlaceholder)
    }

    let parts: [Part]

    /// Why a template was refused (a sentence; never the text).
    public struct Problem: Error, Sendable, Equatable {
        public let reason: String
    }

    /// The placeholders, in order of appearance (repeats included).
    public var placeholders: [CardPlaceholder] {
        parts.compactMap { if case .placeholder(let placeholder) = $0 { placeholder } else { nil } }
    }

    /// Parses `text`.
    public init(parsing text: String) throws(Problem) {
        let bytes = Array(text.utf8)
        var parts: [Part] = []
        var literal: [UInt8] = []
        var index = 0
        while index < bytes.count {
            guard bytes[index] == 0x7B, index + 1 < bytes.count, bytes[index + 1] == 0x7B else {
                literal.append(bytes[index])
                index += 1
                continue
            }
            var cursor = index + 2
            while cursor < bytes.count, bytes[cursor] == 0x20 { cursor += 1 }
            guard Self.hasPrefix(bytes, at: cursor, "card.") else {
                literal += [0x7B, 0x7B]
                index += 2
                continue
            }
            cursor += 5
            let idStart = cursor
            while cursor < bytes.count, Self.isIdentifierByte(bytes[cursor]) { cursor += 1 }
            let id = String(decoding: bytes[idStart..<cursor], as: UTF8.self)
            guard !id.isEmpty, id.utf8.count <= 100, cursor < bytes.count, bytes[cursor] == 0x2E else {
                throw Problem(reason: "has a malformed placeholder at byte \(index): use {{card.<CardId>.<field>}}")
            }
            cursor += 1
            let fieldStart = cursor
            while cursor < bytes.count, (bytes[cursor] >= 0x61 && bytes[cursor] <= 0x7A) || bytes[cursor] == 0x5F {
                cursor += 1
            }
            let fieldName = String(decoding: bytes[fieldStart..<cursor], as: UTF8.self)
            while cursor < bytes.count, bytes[cursor] == 0x20 { cursor += 1 }
            guard cursor + 1 < bytes.count, bytes[cursor] == 0x7D, bytes[cursor + 1] == 0x7D else {
                throw Problem(reason: "has a malformed placeholder at byte \(index): use {{card.<CardId>.<field>}}")
            }
            guard let field = CardField(rawValue: fieldName) else {
                throw Problem(
                    reason: "names an unknown card field '\(fieldName.prefix(20))' (use "
                        + CardField.allCases.map(\.rawValue).joined(separator: ", ") + ")")
            }
            if !literal.isEmpty {
                parts.append(.literal(literal))
                literal = []
            }
            parts.append(.placeholder(CardPlaceholder(cardId: id, field: field)))
            index = cursor + 2
        }
        if !literal.isEmpty { parts.append(.literal(literal)) }
        self.parts = parts
    }

    /// Writes the template into `output`, each placeholder replaced by `value(placeholder)` escaped as `escaping`.
    public func render(
        into output: WipedBuffer, escaping: TemplateEscaping, value: (CardPlaceholder) -> WipedBuffer
    ) {
        for part in parts {
            switch part {
            case .literal(let bytes):
                output.append(contentsOf: bytes)
            case .placeholder(let placeholder):
                let substituted = value(placeholder)
                switch escaping {
                case .raw:
                    output.append(substituted)
                case .json:
                    substituted.withUnsafeBytes { Self.appendJSONEscaped($0, to: output) }
                case .form:
                    substituted.withUnsafeBytes { Self.appendPercentEncoded($0, to: output) }
                }
            }
        }
    }

    /// The size of the template's literal parts (a lower bound of the rendered size).
    public var literalByteCount: Int {
        parts.reduce(0) { total, part in
            if case .literal(let bytes) = part { return total + bytes.count }
            return total
        }
    }

    static func appendJSONEscaped(_ bytes: UnsafeBufferPointer<UInt8>, to output: WipedBuffer) {
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        for byte in bytes {
            switch byte {
            case 0x22: output.append(contentsOf: [0x5C, 0x22])
            case 0x5C: output.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: output.append(contentsOf: [0x5C, 0x6E])
            case 0x0D: output.append(contentsOf: [0x5C, 0x72])
            case 0x09: output.append(contentsOf: [0x5C, 0x74])
            case ..<0x20: output.append(contentsOf: [0x5C, 0x75, 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 15)]])
            default: output.append(byte)
            }
        }
    }

    static func appendPercentEncoded(_ bytes: UnsafeBufferPointer<UInt8>, to output: WipedBuffer) {
        let hex: [UInt8] = Array("0123456789ABCDEF".utf8)
        for byte in bytes {
            let unreserved =
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x7E
            if unreserved {
                output.append(byte)
            } else {
                output.append(contentsOf: [0x25, hex[Int(byte >> 4)], hex[Int(byte & 15)]])
            }
        }
    }

    static func hasPrefix(_ bytes: [UInt8], at index: Int, _ prefix: String) -> Bool {
        let expected = Array(prefix.utf8)
        guard index + expected.count <= bytes.count else { return false }
        return bytes[index..<(index + expected.count)].elementsEqual(expected)
    }

    static func isIdentifierByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            || byte == 0x5F || byte == 0x2D
    }

    /// The escaping a body needs, from its `Content-Type`.
    public static func escaping(forContentType contentType: String?) -> TemplateEscaping {
        guard let contentType else { return .raw }
        let mediaType =
            contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            ?? ""
        if mediaType == "application/json" || mediaType.hasSuffix("+json") { return .json }
        if mediaType == "application/x-www-form-urlencoded" { return .form }
        return .raw
    }
}
