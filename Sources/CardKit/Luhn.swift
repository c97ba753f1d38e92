/// The Luhn (mod 10) check digit algorithm of ISO/IEC 7812-1.
public enum Luhn {
    /// True when `digits` is non-empty, all ASCII digits, and its Luhn sum is a multiple of ten.
    ///
    /// A byte loop from the right: no allocation, no `Character` handling.
    /// - Parameter digits: ASCII digits (`0x30`–`0x39`), most significant first.
    @inlinable
    public static func isValid(_ digits: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = digits.count
        guard index > 0 else { return false }
        // Two digits per step from the right: the rightmost of each pair as is, the other doubled (digit sum).
        var sum: UInt32 = 0
        while index >= 2 {
            let plain = UInt32(digits[index &- 1] &- 0x30)
            let doubled = UInt32(digits[index &- 2] &- 0x30)
            if plain > 9 || doubled > 9 { return false }
            let twice = doubled &* 2
            sum &+= plain &+ (twice > 9 ? twice &- 9 : twice)
            index &-= 2
        }
        if index == 1 {
            let plain = UInt32(digits[0] &- 0x30)
            if plain > 9 { return false }
            sum &+= plain
        }
        return sum % 10 == 0
    }

    /// True when `digits` (ASCII digits only, no separators) passes the Luhn check.
    public static func isValid(_ digits: String) -> Bool {
        var copy = digits
        return copy.withUTF8 { isValid($0) }
    }

    /// The check digit (0–9) that makes `payload` followed by it pass the Luhn check, or nil when `payload` is
    /// empty or not all ASCII digits.
    public static func checkDigit(for payload: String) -> Int? {
        guard !payload.isEmpty else { return nil }
        var sum = 0
        var double = true
        for byte in payload.utf8.reversed() {
            let digit = Int(byte &- 0x30)
            guard digit < 10 else { return nil }
            if double {
                let twice = digit * 2
                sum += twice > 9 ? twice - 9 : twice
            } else {
                sum += digit
            }
            double.toggle()
        }
        return (10 - sum % 10) % 10
    }
}
