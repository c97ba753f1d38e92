import Foundation
public import VaultCore

/// How an install keeps its master key, as `<keys>/custody.json` (or PostgreSQL's `cardvault_custody`) records it:
/// the provider, the share parameters, the master key's check value and, for shares, the master key wrapped under
/// the unseal key (never the unseal key, never a share).
///
/// - `file`: the development key file `<keys>/master.key` (PCI DSS 3.6.1.2 does not allow it in production);
/// - `shares`: the master key is wrapped under an unseal key that is never stored: `threshold` of `shares` operator
///   shares rebuild it in locked memory at each start. A rekey makes a new unseal key (old shares open nothing);
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
    /// The master key's check value (``KeyCheckValue``, hex); the same across rekeys.
    public var masterCheckValue: String?
    /// The master key sealed under the unseal key (AES-256-GCM, base64), shares custody.
    public var wrappedMaster: String?
    /// While a master rotation is under way: the master key the keyring may still be under, sealed under the same
    /// unseal key; dropped once the keyring is rewrapped (so a crash between the two writes loses nothing).
    public var previousWrappedMaster: String?

    static let masterLabel = Array("cardvault master key v1".utf8)

    public init(provider: Provider, threshold: Int? = nil, shares: Int? = nil, masterCheckValue: String? = nil) {
        self.provider = provider
        self.threshold = threshold
        self.shares = shares
        self.masterCheckValue = masterCheckValue
    }

    /// The master key, opened with the unseal key the shares rebuilt.
    /// - Throws: ``KeyRingError`` `.wrongKey` when the unseal key does not open it (shares of another set).
    public func openMaster(with unsealKey: SecureBytes) throws -> SecureBytes {
        guard let wrappedMaster else { throw KeyRingError(.damaged, "the custody record holds no wrapped master key") }
        return try Self.open(wrappedMaster, with: unsealKey)
    }

    /// The master keys the keyring may be under: the current one, then the previous one of an unfinished rotation.
    public func openMasters(with unsealKey: SecureBytes) throws -> [SecureBytes] {
        let current = try openMaster(with: unsealKey)
        guard let previousWrappedMaster else { return [current] }
        return [current, try Self.open(previousWrappedMaster, with: unsealKey)]
    }

    private static func open(_ text: String, with unsealKey: SecureBytes) throws -> SecureBytes {
        guard let sealed = Data(base64Encoded: text) else {
            throw KeyRingError(.damaged, "the custody record holds a malformed master key")
        }
        do {
            return try AESGCM.open(sealed, using: SymmetricKey(unsealKey), authenticating: Self.masterLabel)
        } catch {
            throw KeyRingError(.wrongKey, "the shares rebuild a key that does not open this vault's master key")
        }
    }

    /// The custody file encoded (JSON), as the file and the PostgreSQL row hold it.
    public func encoded() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return Array(try encoder.encode(self))
    }

    /// Parses a custody record.
    public static func decode(_ bytes: some Collection<UInt8>, source: String) throws -> KeyCustody {
        do {
            return try JSONDecoder().decode(KeyCustody.self, from: Data(bytes))
        } catch {
            throw KeyRingError(.damaged, "\(source) cannot be parsed")
        }
    }

    /// The custody file's path in `keysDirectory`.
    public static func path(_ keysDirectory: String) -> String {
        (keysDirectory as NSString).appendingPathComponent(fileName)
    }

    /// The custody recorded in `keysDirectory`, or nil when there is no custody file.
    /// - Throws: ``KeyRingError`` `.damaged` when the file cannot be parsed.
    public static func read(keysDirectory: String) throws -> KeyCustody? {
        guard let bytes = try KeyFile.readFile(path(keysDirectory)) else { return nil }
        return try decode(bytes, source: path(keysDirectory))
    }

    /// Writes the custody file atomically (mode 0600).
    public func write(keysDirectory: String) throws {
        try KeyFile.writeAtomically(Self.path(keysDirectory), try encoded())
    }
}

/// Where an install's custody record lives: the keys directory (file store), or the database every daemon shares.
public protocol CustodyRecords: Sendable {
    /// The record, nil when none was written.
    func read() throws -> KeyCustody?
    /// Replaces the record durably.
    func write(_ custody: KeyCustody) throws
}

/// The custody record in `<keys>/custody.json`.
public struct CustodyFile: CustodyRecords {
    public let keysDirectory: String

    public init(keysDirectory: String) {
        self.keysDirectory = keysDirectory
    }

    public func read() throws -> KeyCustody? { try KeyCustody.read(keysDirectory: keysDirectory) }
    public func write(_ custody: KeyCustody) throws { try custody.write(keysDirectory: keysDirectory) }
}

/// A master key under a fresh unseal key split into operator shares: what `keys init`, `keys seal`, `keys rekey`
/// and `keys rotate-master` hand out once. The custody record carries the master key wrapped under the unseal key.
public struct MasterKeySplit: Sendable {
    public let masterKey: MemoryKeyEncryptionKey
    public let shares: [KeyShare]
    public private(set) var custody: KeyCustody
    private let unsealKey: SecureBytes

    /// Wraps `master` (32 bytes) under a new random unseal key, split into `count` shares, `threshold` of which
    /// rebuild it.
    public init(master: SecureBytes, threshold: Int, count: Int, random: any RandomSource = RandomPool.shared) throws {
        masterKey = MemoryKeyEncryptionKey(SymmetricKey(master))
        let unsealKey = SecureBytes(count: KeyFile.masterKeySize) { random.fill($0) }
        self.unsealKey = unsealKey
        shares = KeyShares.split(unsealKey, threshold: threshold, count: count, random: random)
        var custody = KeyCustody(
            provider: .shares, threshold: threshold, shares: count, masterCheckValue: KeyCheckValue.hex(of: master))
        let sealed = try master.withUnsafeBytes {
            try AESGCM.seal($0, using: SymmetricKey(unsealKey), authenticating: KeyCustody.masterLabel)
        }
        custody.wrappedMaster = Data(sealed).base64EncodedString()
        self.custody = custody
    }

    /// A new random master key, split.
    public static func fresh(
        threshold: Int, count: Int, random: any RandomSource = RandomPool.shared
    ) throws
        -> MasterKeySplit
    {
        let master = SecureBytes(count: KeyFile.masterKeySize) { random.fill($0) }
        return try MasterKeySplit(master: master, threshold: threshold, count: count, random: random)
    }

    /// The same split, whose custody record also keeps `previous` (the master key the keyring is under until it is
    /// rewrapped) under the new unseal key: the record written before a rotation's rewrap.
    public func keeping(previous: SecureBytes) throws -> MasterKeySplit {
        var copy = self
        let sealed = try previous.withUnsafeBytes {
            try AESGCM.seal($0, using: SymmetricKey(unsealKey), authenticating: KeyCustody.masterLabel)
        }
        copy.custody.previousWrappedMaster = Data(sealed).base64EncodedString()
        return copy
    }

    /// The shares as text lines and check values, for the admin channel (``ShareText``).
    public var shareLines: [(index: Int, line: String, checkValue: String)] {
        shares.map { (Int($0.index), ShareText.encode($0), $0.checkValue) }
    }
}
