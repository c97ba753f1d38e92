public import VaultCore

/// One full-length share of a secret split by ``KeyShares``: its index (the point x, 1–255) and as many bytes as
/// the secret, in secure memory.
public struct KeyShare: Sendable {
    /// The share's x coordinate, 1...255 (never 0: f(0) is the secret).
    public let index: UInt8
    /// How many shares rebuild the secret.
    public let threshold: Int
    /// f(index) for each byte of the secret.
    public let bytes: SecureBytes

    public init(index: UInt8, threshold: Int, bytes: SecureBytes) {
        self.index = index
        self.threshold = threshold
        self.bytes = bytes
    }

    /// The share's own key check value (``KeyCheckValue``), 6 hexadecimal digits.
    public var checkValue: String { KeyCheckValue.hex(of: bytes) }
}

/// Shamir's secret sharing over GF(2^8) (the AES field, x^8 + x^4 + x^3 + x + 1), byte by byte: any `threshold`
/// shares rebuild the secret, fewer tell nothing about it. Field arithmetic runs without tables or branches on
/// secret values.
public enum KeyShares {
    /// The most shares one split makes.
    public static let maximumShares = 16

    /// Splits `secret` into `count` shares, `threshold` of which rebuild it.
    /// - Precondition: 2 ≤ threshold ≤ count ≤ ``maximumShares``.
    public static func split(
        _ secret: SecureBytes, threshold: Int, count: Int, random: any RandomSource = RandomPool.shared
    ) -> [KeyShare] {
        precondition(2 <= threshold && threshold <= count && count <= maximumShares, "invalid share parameters")
        let length = secret.count
        // Coefficients a1...a(k-1) of each byte's polynomial; a0 is the secret byte.
        let coefficients = SecureBytes(count: length * (threshold - 1)) { random.fill($0) }
        return (1...count).map { x in
            let index = UInt8(x)
            let bytes = SecureBytes(count: length) { out in
                secret.withUnsafeBytes { secretBytes in
                    coefficients.withUnsafeBytes { coefficientBytes in
                        for position in 0..<length {
                            // Horner: ((a(k-1) x + a(k-2)) x + ...) x + a0.
                            var value: UInt8 = 0
                            for degree in stride(from: threshold - 1, through: 1, by: -1) {
                                value =
                                    multiply(value, index) ^ coefficientBytes[position * (threshold - 1) + degree - 1]
                            }
                            out[position] = multiply(value, index) ^ secretBytes[position]
                        }
                    }
                }
            }
            return KeyShare(index: index, threshold: threshold, bytes: bytes)
        }
    }

    /// Rebuilds the secret from shares with distinct indexes, all of one length (Lagrange interpolation at 0).
    /// With fewer shares than the split's threshold the result is a different, useless value: callers check it
    /// against a stored check value.
    /// - Precondition: at least one share; indexes distinct and non-zero; lengths equal.
    public static func combine(_ shares: [KeyShare]) -> SecureBytes {
        precondition(!shares.isEmpty, "no shares")
        let length = shares[0].bytes.count
        precondition(shares.allSatisfy { $0.bytes.count == length && $0.index != 0 }, "mismatched shares")
        precondition(Set(shares.map(\.index)).count == shares.count, "repeated share index")
        // The Lagrange basis at 0 for each share: product of x_m / (x_m + x_j) over m != j (+ is XOR).
        let weights = shares.indices.map { j in
            var weight: UInt8 = 1
            for m in shares.indices where m != j {
                weight = multiply(weight, multiply(shares[m].index, inverse(shares[m].index ^ shares[j].index)))
            }
            return weight
        }
        return SecureBytes(count: length) { out in
            for (share, weight) in zip(shares, weights) {
                share.bytes.withUnsafeBytes { bytes in
                    for position in 0..<length { out[position] ^= multiply(bytes[position], weight) }
                }
            }
        }
    }

    /// Product in GF(2^8), without branches on the operands.
    static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        var a = a
        var b = b
        var product: UInt8 = 0
        for _ in 0..<8 {
            product ^= a & (0 &- (b & 1))
            let carry = 0 &- (a >> 7)
            a = (a << 1) ^ (0x1b & carry)
            b >>= 1
        }
        return product
    }

    /// Multiplicative inverse in GF(2^8): a^254 (0 for 0).
    static func inverse(_ a: UInt8) -> UInt8 {
        var result: UInt8 = 1
        var power = a
        var exponent = 254
        while exponent > 0 {
            if exponent & 1 == 1 { result = multiply(result, power) }
            power = multiply(power, power)
            exponent >>= 1
        }
        return result
    }
}
