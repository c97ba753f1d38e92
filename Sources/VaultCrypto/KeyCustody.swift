import Foundation
public import VaultCore

/// How an install keeps its master key, as `<keys>/custody.json` records it (no key material: the provider, the
/// share parameters and the master key's check value).
///
/// - `file`: the development key file `<keys>/master.key` (PCI DSS 3.6.1.2 does not allow it in production);
/// - `shares`: never stored; rebuilt in locked memory from `threshold` of `shares` operator shares at each start;
/// - `pkcs11`: a non-extractable key inside a hardware token; the daemon unseals itself at start.
public struct KeyCustody: Codable, Sendable, Equatable {
    /// The custody file's name inside the keys directory.
    public static let fileName = "custody.json"

    public enum Provider: String, Codable, Sendable, CaseIterable {
        case file, shares, pkcs11
    }

    public var format = 1
    public var provider: Provider
    /// Shares needed to unseal (shares custody).
    public var threshold: Int?
    /// Shares made (shares custody).
    public var shares: Int?
    /// The master key's check value (``KeyCheckValue``, hex), to tell a wrong set of shares at once.
    public var masterCheckValue: String?

    public init(provider: Provider, threshold: Int? = nil, shares: Int? = nil, masterCheckValue: String? = nil) {
        self.provider = provider
        self.threshold = threshold
        self.shares = shares
        self.masterCheckValue = masterCheckValue
    }

    /// The custody file's path in `keysDirectory`.
    public static func path(_ keysDirectory: String) -> String {
        (keysDirectory as NSString).appendingPathComponent(fileName)
    }

    /// The custody recorded in `keysDirectory`, or nil when there is no custody file.
    /// - Throws: ``KeyRingError`` `.damaged` when the file cannot be parsed.
    public static func read(keysDirectory: String) throws -> KeyCustody? {
        guard let bytes = try KeyFile.readFile(path(keysDirectory)) else { return nil }
        do {
            return try JSONDecoder().decode(KeyCustody.self, from: Data(bytes))
        } catch {
            throw KeyRingError(.damaged, "\(path(keysDirectory)) cannot be parsed")
        }
    }

    /// Writes the custody file atomically (mode 0600).
    public func write(keysDirectory: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try KeyFile.writeAtomically(Self.path(keysDirectory), try encoder.encode(self))
    }
}

/// A fresh master key split into operator shares: what `keys init`, `keys seal`, `keys rekey` and
/// `keys rotate-master` hand out once.
public struct MasterKeySplit: Sendable {
    public let masterKey: MemoryKeyEncryptionKey
    public let shares: [KeyShare]
    public let custody: KeyCustody

    /// Splits `master` (32 bytes) into `count` shares, `threshold` of which rebuild it.
    public init(master: SecureBytes, threshold: Int, count: Int, random: any RandomSource = RandomPool.shared) {
        masterKey = MemoryKeyEncryptionKey(SymmetricKey(master))
        shares = KeyShares.split(master, threshold: threshold, count: count, random: random)
        custody = KeyCustody(
            provider: .shares, threshold: threshold, shares: count, masterCheckValue: KeyCheckValue.hex(of: master))
    }

    /// A new random master key, split.
    public static func fresh(threshold: Int, count: Int, random: any RandomSource = RandomPool.shared)
        -> MasterKeySplit
    {
        let master = SecureBytes(count: KeyFile.masterKeySize) { random.fill($0) }
        return MasterKeySplit(master: master, threshold: threshold, count: count, random: random)
    }

    /// The shares as text lines and check values, for the admin channel (``ShareText``).
    public var shareLines: [(index: Int, line: String, checkValue: String)] {
        shares.map { (Int($0.index), ShareText.encode($0), $0.checkValue) }
    }
}
