public import CardKit
public import OutboundHTTP

/// Finds card numbers in a destination's answer so that the merchant gets their alias instead.
///
/// Two kinds of match, both with or without separators (one space, `-`, `.` or `_` between digits):
/// - the numbers this forward sent (``knownMatches(in:numbers:)``), found anywhere, even inside a longer run of
///   digits;
/// - every other number that passes the Luhn check for a known brand, made of whole digit groups
///   (``candidates(in:)``); the caller keeps those it finds in the client's vault (by fingerprint).
public enum CardNumberScrubber {
    /// A card number found at `range` of the scanned bytes.
    public struct Match: Sendable {
        public let range: Range<Int>
        public let pan: PAN
    }

    static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
    static func isSeparator(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x2D || byte == 0x2E || byte == 0x5F }

    /// Numbers made of whole digit groups joined by single separators, 12 to 19 digits, Luhn-valid and of a known
    /// brand, at most `limit` of them.
    public static func candidates(in bytes: UnsafeBufferPointer<UInt8>, limit: Int = 10_000) -> [Match] {
        // Maximal digit runs.
        var groups: [Range<Int>] = []
        var index = 0
        while index < bytes.count {
            if isDigit(bytes[index]) {
                let start = index
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
                groups.append(start..<index)
            } else {
                index += 1
            }
        }
        var matches: [Match] = []
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { scratch in
            defer { scratch.initializeMemory(as: UInt8.self, repeating: 0) }
            for first in groups.indices {
                var count = 0
                var last = first
                while last < groups.count {
                    let group = groups[last]
                    if last > first {
                        let gap = groups[last - 1].upperBound..<group.lowerBound
                        guard gap.count == 1, isSeparator(bytes[gap.lowerBound]) else { break }
                    }
                    guard count + group.count <= 19 else { break }
                    for position in group {
                        scratch[count] = bytes[position]
                        count += 1
                    }
                    if count >= 12 {
                        let number = UnsafeBufferPointer(rebasing: scratch.bindMemory(to: UInt8.self)[0..<count])
                        if let pan = try? PAN(validating: number) {
                            matches.append(Match(range: groups[first].lowerBound..<group.upperBound, pan: pan))
                            if matches.count >= limit { return }
                        }
                    }
                    last += 1
                }
            }
        }
        return matches
    }

    /// Every place where one of `numbers` appears, digits optionally split by single separators.
    public static func knownMatches(in bytes: UnsafeBufferPointer<UInt8>, numbers: [PAN]) -> [Match] {
        var matches: [Match] = []
        for pan in numbers {
            pan.withASCIIDigits { digits in
                var start = 0
                while start < bytes.count {
                    guard bytes[start] == digits[0] else {
                        start += 1
                        continue
                    }
                    var position = start
                    var matched = 0
                    while matched < digits.count, position < bytes.count {
                        if bytes[position] == digits[matched] {
                            matched += 1
                            position += 1
                        } else if matched > 0, isSeparator(bytes[position]), position + 1 < bytes.count,
                            bytes[position + 1] == digits[matched]
                        {
                            position += 1
                        } else {
                            break
                        }
                    }
                    if matched == digits.count {
                        matches.append(Match(range: start..<position, pan: pan))
                        start = position
                    } else {
                        start += 1
                    }
                }
            }
        }
        return matches
    }

    /// `bytes` with each chosen match replaced by its alias: matches are taken left to right, the longest first,
    /// skipping any that overlaps one already taken.
    public static func replacing(_ matches: [Match], in bytes: UnsafeBufferPointer<UInt8>) -> WipedBuffer {
        let ordered = matches.sorted {
            $0.range.lowerBound != $1.range.lowerBound
                ? $0.range.lowerBound < $1.range.lowerBound : $0.range.count > $1.range.count
        }
        let output = WipedBuffer(capacity: bytes.count)
        var cursor = 0
        for match in ordered where match.range.lowerBound >= cursor {
            if match.range.lowerBound > cursor {
                output.append(UnsafeRawPointer(bytes.baseAddress! + cursor), length: match.range.lowerBound - cursor)
            }
            output.append(contentsOf: match.pan.alias.utf8)
            cursor = match.range.upperBound
        }
        if cursor < bytes.count, let base = bytes.baseAddress {
            output.append(UnsafeRawPointer(base + cursor), length: bytes.count - cursor)
        }
        return output
    }
}
