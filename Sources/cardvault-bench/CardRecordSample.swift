/// The 100-byte card record the crypto suite seals, byte for byte the one the C baseline builds
/// (`bench/c/card_record.h`): a test PAN at offset 8 whose last digits vary, expiry, holder, client.
enum CardRecordSample {
    /// Bytes in a record.
    static let length = 100
    /// Where the 16-digit PAN starts.
    static let panOffset = 8
    /// Digits in the PAN.
    static let panLength = 16
    /// How many distinct records (PANs) the workloads cycle through.
    static let count = 64

    private static let template = Array(
        (#"{"pan":"4970100000000000","exp":"1229","holder":"A SHOPPER","client":"merchant-0001","v":1}"#
            + "         ").utf8)

    /// Record number `n` (mod ``count``): the template with the PAN's last six digits set to `n`.
    static func record(_ n: Int) -> [UInt8] {
        var bytes = template
        var value = n % count
        for index in 0..<6 {
            bytes[panOffset + panLength - 1 - index] = UInt8(ascii: "0") + UInt8(value % 10)
            value /= 10
        }
        precondition(bytes.count == length)
        return bytes
    }
}
