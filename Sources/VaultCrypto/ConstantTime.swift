import COpenSSL
public import Foundation

/// Comparisons whose running time does not depend on where the inputs differ.
public enum ConstantTime {
    /// True when `lhs` and `rhs` hold the same bytes. Lengths are not secret; contents are.
    public static func equals(_ lhs: some ContiguousBytes, _ rhs: some ContiguousBytes) -> Bool {
        lhs.withUnsafeBytes { left in
            rhs.withUnsafeBytes { right in
                guard left.count == right.count else { return false }
                guard left.count > 0 else { return true }
                return CRYPTO_memcmp(left.baseAddress, right.baseAddress, left.count) == 0
            }
        }
    }
}
