import COpenSSL
import VaultCore

/// A key check value (KCV): the first 3 bytes of AES-256-ECB of a zero block under a 32-byte key, as key
/// ceremonies print them. It tells a mistyped share or key from the right one without revealing it.
public enum KeyCheckValue {
    /// Bytes in a check value.
    public static let size = 3

    /// The check value of the 32 bytes `key`.
    /// - Precondition: `key` holds exactly 32 bytes.
    public static func of(_ key: UnsafeRawBufferPointer) -> [UInt8] {
        precondition(key.count == 32, "a key check value needs a 32-byte key")
        guard let context = EVP_CIPHER_CTX_new() else { fatalError("EVP_CIPHER_CTX_new failed") }
        defer { EVP_CIPHER_CTX_free(context) }
        var block = [UInt8](repeating: 0, count: 32)
        var written: Int32 = 0
        let zero = [UInt8](repeating: 0, count: 16)
        let ok =
            EVP_EncryptInit_ex2(
                context, EVP_aes_256_ecb(), key.baseAddress?.assumingMemoryBound(to: UInt8.self), nil, nil) == 1
            && EVP_CIPHER_CTX_set_padding(context, 0) == 1
            && EVP_EncryptUpdate(context, &block, &written, zero, 16) == 1
        precondition(ok && written == 16, "AES-256-ECB failed")
        return Array(block.prefix(size))
    }

    /// The check value of `key`, as 6 lowercase hexadecimal digits.
    public static func hex(of key: SecureBytes) -> String {
        key.withUnsafeBytes { Identifier.hex(of($0)) }
    }
}
