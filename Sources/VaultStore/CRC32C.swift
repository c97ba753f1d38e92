import CCRC32C

/// CRC-32C (Castagnoli), the checksum of record frames and index checkpoints. It finds torn and
/// damaged bytes; authentication is AES-GCM's job, not this one's. Computed by the CPU's own
/// instruction where it has one (SSE 4.2), by tables otherwise.
enum CRC32C {
    private static let hardware = cv_crc32c_available() != 0

    /// Eight 256-entry tables for slicing-by-8 (reflected polynomial 0x82F63B78).
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            tables[byte] = crc
        }
        for slice in 1..<8 {
            for byte in 0..<256 {
                let previous = tables[(slice - 1) * 256 + byte]
                tables[slice * 256 + byte] = (previous >> 8) ^ tables[Int(previous & 0xFF)]
            }
        }
        return tables
    }()

    /// The checksum of `bytes`, continuing from `seed` (the result of a previous call, or 0).
    static func checksum(_ bytes: UnsafeRawBufferPointer, seed: UInt32 = 0) -> UInt32 {
        if hardware {
            guard let base = bytes.baseAddress else { return seed }
            return ~cv_crc32c_update(~seed, base, bytes.count)
        }
        return checksumByTables(bytes, seed: seed)
    }

    /// The portable computation (also what tests check the instruction against).
    static func checksumByTables(_ bytes: UnsafeRawBufferPointer, seed: UInt32 = 0) -> UInt32 {
        tables.withUnsafeBufferPointer { table in
            var crc = ~seed
            var index = 0
            let count = bytes.count
            guard let base = bytes.baseAddress else { return seed }
            while count - index >= 8 {
                let low = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt32.self)) ^ crc
                let high = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: index + 4, as: UInt32.self))
                crc =
                    table[7 * 256 + Int(low & 0xFF)] ^ table[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ table[5 * 256 + Int((low >> 16) & 0xFF)] ^ table[4 * 256 + Int(low >> 24)]
                    ^ table[3 * 256 + Int(high & 0xFF)] ^ table[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ table[1 * 256 + Int((high >> 16) & 0xFF)] ^ table[Int(high >> 24)]
                index += 8
            }
            while index < count {
                crc = (crc >> 8) ^ table[Int((crc ^ UInt32(base.load(fromByteOffset: index, as: UInt8.self))) & 0xFF)]
                index += 1
            }
            return ~crc
        }
    }

    /// The checksum of an array's bytes.
    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }
}
