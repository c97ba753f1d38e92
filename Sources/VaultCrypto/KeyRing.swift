import Foundation
import Synchronization
import VaultCore

/// A failure of the keyring or its files. Equal by code; messages name files, never key bytes.
public struct KeyRingError: CodedError, Equatable {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        public var description: String { name }

        /// A key file does not exist (run `cardvault keys init`).
        public static let missing = Code(name: "missing")
        /// A file to be created exists already.
        public static let exists = Code(name: "exists")
        /// A key file may be read or written by group or others.
        public static let insecurePermissions = Code(name: "insecurePermissions")
        /// The master key file is not 32 bytes.
        public static let invalidMasterKey = Code(name: "invalidMasterKey")
        /// The master key does not unwrap this data directory's keyring.
        public static let wrongMasterKey = Code(name: "wrongMasterKey")
        /// The keyring file cannot be parsed or a wrapped key fails authentication.
        public static let damaged = Code(name: "damaged")
        /// No data key has this version, or it was retired.
        public static let unknownVersion = Code(name: "unknownVersion")
        /// The operation is refused for this version (the current one, or one still in use).
        public static let versionInUse = Code(name: "versionInUse")
        /// A file operation failed.
        public static let io = Code(name: "io")
    }

    public let code: Code
    public let message: String
    public let location: SourceLocation

    public init(_ code: Code, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.location = SourceLocation(file: file, line: line)
    }

    public static func == (lhs: KeyRingError, rhs: KeyRingError) -> Bool { lhs.code == rhs.code }
}

/// What the keyring tells about one data key version (never the key itself).
public struct DataKeyInfo: Sendable, Equatable {
    public var version: UInt32
    public var created: Date
    /// A retired version has no key material left; records under it can no longer be read.
    public var retired: Bool

    public init(version: UInt32, created: Date, retired: Bool) {
        self.version = version
        self.created = created
        self.retired = retired
    }
}

/// The keys of one data directory: a master key-encryption key (KEK) read from
/// `<keys>/master.key`, versioned data keys (DEKs) and a fingerprint secret wrapped by the KEK in
/// `<data>/keyring.json`.
///
/// New writes use ``currentKey()``; every unretired version still decrypts. ``rotate()`` adds a
/// version, ``rotateMaster()`` re-wraps everything under a fresh KEK, ``retire(version:)`` drops a
/// version's material. Each change is written atomically before it takes effect in memory. The
/// caller holds the data directory's lock (the record store does).
public final class KeyRing: Sendable {
    /// The master key's file name inside the keys directory.
    public static let masterKeyFileName = "master.key"
    /// The keyring's file name inside the data directory.
    public static let keyRingFileName = "keyring.json"

    public let dataDirectory: String
    public let keysDirectory: String
    /// Per-client fingerprint keys derived from the wrapped fingerprint secret.
    public let fingerprintKeys: DerivedFingerprintKeys

    private struct State {
        var kek: SymmetricKey
        var keys: [UInt32: SymmetricKey]
        var infos: [DataKeyInfo]
        var current: UInt32
        var fingerprintSecret: SymmetricKey
    }

    private let state: Locked<State>
    private let clock: any WallClock

    private init(dataDirectory: String, keysDirectory: String, state: State, clock: any WallClock) {
        self.dataDirectory = dataDirectory
        self.keysDirectory = keysDirectory
        self.fingerprintKeys = DerivedFingerprintKeys(secret: state.fingerprintSecret)
        self.state = Locked(state)
        self.clock = clock
    }

    // MARK: Master key

    /// Path of the master key in `keysDirectory`.
    public static func masterKeyPath(_ keysDirectory: String) -> String {
        (keysDirectory as NSString).appendingPathComponent(masterKeyFileName)
    }

    /// Creates `<keysDirectory>/master.key` (32 random bytes, 0600) unless it exists, and makes the directory
    /// private (0700): created so, or tightened when it exists (a fresh checkout's `keys/` is 0755, which
    /// `serve` refuses).
    /// - Returns: true when a key was created, false when one was there already.
    @discardableResult
    public static func createMasterKey(keysDirectory: String, random: RandomPool = .shared) throws -> Bool {
        try KeyFile.makeDirectory(keysDirectory)
        guard chmod(keysDirectory, 0o700) == 0 else {
            throw KeyRingError(.io, "cannot make \(keysDirectory) private (chmod 700): \(String(cString: strerror(errno)))")
        }
        let path = masterKeyPath(keysDirectory)
        if access(path, F_OK) == 0 { return false }
        let key = SecureBytes(count: KeyFile.masterKeySize) { random.fill($0) }
        do {
            try key.withUnsafeBytes { try KeyFile.writeAtomically(path, $0, exclusive: true) }
        } catch let error as KeyRingError where error.code == .exists {
            return false
        }
        return true
    }

    static func readMasterKey(_ path: String) throws -> SymmetricKey {
        let bytes: SecureBytes
        do {
            bytes = try KeyFile.readSecret(path)
        } catch let error as KeyRingError where error.code == .missing {
            throw KeyRingError(.missing, "master key \(path) does not exist; create it with `cardvault keys init`")
        }
        guard bytes.count == KeyFile.masterKeySize else {
            throw KeyRingError(.invalidMasterKey, "master key \(path) must hold exactly 32 bytes")
        }
        return SymmetricKey(bytes)
    }

    // MARK: Opening

    /// Opens the keyring of `dataDirectory`, creating it (data key version 1 and a fingerprint
    /// secret) when the directory has none. Finishes an interrupted ``rotateMaster()``.
    /// - Throws: ``KeyRingError``: `.missing` master key, `.wrongMasterKey`, `.damaged`, `.io`.
    public static func open(
        dataDirectory: String, keysDirectory: String, clock: any WallClock = SystemClock()
    ) throws -> KeyRing {
        let masterPath = masterKeyPath(keysDirectory)
        var kek = try readMasterKey(masterPath)
        let ringPath = (dataDirectory as NSString).appendingPathComponent(keyRingFileName)
        guard let data = try KeyFile.readFile(ringPath) else {
            let dek = SymmetricKey.random()
            let secret = SymmetricKey.random()
            let info = DataKeyInfo(version: 1, created: clock.now, retired: false)
            let state = State(kek: kek, keys: [1: dek], infos: [info], current: 1, fingerprintSecret: secret)
            try write(state, to: ringPath, exclusive: true)
            return KeyRing(dataDirectory: dataDirectory, keysDirectory: keysDirectory, state: state, clock: clock)
        }
        let file: KeyRingFile
        do {
            file = try JSONDecoder().decode(KeyRingFile.self, from: Data(data))
        } catch {
            throw KeyRingError(.damaged, "\(ringPath) cannot be parsed")
        }
        guard file.format == 1, let check = Data(base64Encoded: file.kekCheck) else {
            throw KeyRingError(.damaged, "\(ringPath) has an unknown format")
        }
        if !ConstantTime.equals(kekCheck(kek), check) {
            // An interrupted master rotation: the keyring is already under the next key.
            let nextPath = masterPath + ".next"
            if access(nextPath, F_OK) == 0, let next = try? readMasterKey(nextPath),
                ConstantTime.equals(kekCheck(next), check)
            {
                try KeyFile.replace(nextPath, with: masterPath)
                kek = next
            } else {
                throw KeyRingError(.wrongMasterKey, "\(masterPath) is not the master key of \(dataDirectory)")
            }
        }
        var keys: [UInt32: SymmetricKey] = [:]
        var infos: [DataKeyInfo] = []
        for entry in file.dataKeys {
            infos.append(
                DataKeyInfo(
                    version: entry.version, created: Date(timeIntervalSince1970: TimeInterval(entry.created)),
                    retired: entry.wrapped == nil))
            if let wrapped = entry.wrapped {
                keys[entry.version] = try unwrap(wrapped, kek: kek, label: dekLabel(entry.version), file: ringPath)
            }
        }
        let secret = try unwrap(file.fingerprintSecret, kek: kek, label: fingerprintLabel, file: ringPath)
        guard let current = keys.keys.max() else { throw KeyRingError(.damaged, "\(ringPath) holds no data key") }
        let state = State(kek: kek, keys: keys, infos: infos, current: current, fingerprintSecret: secret)
        return KeyRing(dataDirectory: dataDirectory, keysDirectory: keysDirectory, state: state, clock: clock)
    }

    // MARK: Use

    /// The version and key new writes seal under.
    public func currentKey() -> (version: UInt32, key: SymmetricKey) {
        state.withLock { ($0.current, $0.keys[$0.current]!) }
    }

    /// The current data key version.
    public var currentVersion: UInt32 { state.withLock { $0.current } }

    /// The data key of `version`, or nil if unknown or retired.
    public func key(version: UInt32) -> SymmetricKey? {
        state.withLock { $0.keys[version] }
    }

    /// Every data key version, oldest first.
    public var dataKeys: [DataKeyInfo] { state.withLock { $0.infos } }

    // MARK: Changes

    /// Adds a data key version; new writes use it from now on. Old versions still decrypt.
    @discardableResult
    public func rotate() throws -> DataKeyInfo {
        try state.withLock { state in
            var next = state
            let version = (state.infos.map(\.version).max() ?? 0) + 1
            let info = DataKeyInfo(version: version, created: clock.now, retired: false)
            next.keys[version] = SymmetricKey.random()
            next.infos.append(info)
            next.current = version
            try Self.write(next, to: ringPath)
            state = next
            return info
        }
    }

    /// Replaces the master key with a fresh one and re-wraps every data key and the fingerprint
    /// secret under it. Crash-safe: the new key is written to `master.key.next` first, then the
    /// keyring, then the new key is renamed over `master.key` (``open`` finishes a half-done one).
    public func rotateMaster(random: RandomPool = .shared) throws {
        try state.withLock { state in
            let masterPath = Self.masterKeyPath(keysDirectory)
            let nextPath = masterPath + ".next"
            let material = SecureBytes(count: KeyFile.masterKeySize) { random.fill($0) }
            try material.withUnsafeBytes { try KeyFile.writeAtomically(nextPath, $0) }
            var next = state
            next.kek = SymmetricKey(material)
            try Self.write(next, to: ringPath)
            try KeyFile.replace(nextPath, with: masterPath)
            state = next
        }
    }

    /// Drops the key material of `version`. The record store checks first that no record uses it.
    /// - Throws: `.unknownVersion` if there is no such live version, `.versionInUse` for the current one.
    public func retire(version: UInt32) throws {
        try state.withLock { state in
            guard state.keys[version] != nil else {
                throw KeyRingError(.unknownVersion, "data key version \(version) does not exist or is retired")
            }
            guard version != state.current else {
                throw KeyRingError(.versionInUse, "data key version \(version) is the current one; rotate first")
            }
            var next = state
            next.keys[version] = nil
            if let index = next.infos.firstIndex(where: { $0.version == version }) { next.infos[index].retired = true }
            try Self.write(next, to: ringPath)
            state = next
        }
    }

    // MARK: File format

    private var ringPath: String { (dataDirectory as NSString).appendingPathComponent(Self.keyRingFileName) }

    private struct KeyRingFile: Codable {
        struct Entry: Codable {
            var version: UInt32
            var created: Int64
            /// `nonce || wrapped key || tag` under the KEK, base64; absent once retired.
            var wrapped: String?
        }
        var format: Int
        /// The first 16 bytes of HMAC(KEK, label): tells a wrong master key from a damaged file.
        var kekCheck: String
        var fingerprintSecret: String
        var dataKeys: [Entry]
    }

    private static let fingerprintLabel = Array("cardvault fingerprint secret v1".utf8)

    private static func dekLabel(_ version: UInt32) -> [UInt8] { Array("cardvault data key v\(version)".utf8) }

    private static func kekCheck(_ kek: SymmetricKey) -> [UInt8] {
        Array(HMACSHA256.authenticationCode(for: Array("cardvault master key check v1".utf8), using: kek).prefix(16))
    }

    private static func wrap(_ key: SymmetricKey, kek: SymmetricKey, label: [UInt8]) throws -> String {
        let sealed = try key.withUnsafeBytes { try AESGCM.seal($0, using: kek, authenticating: label) }
        return Data(sealed).base64EncodedString()
    }

    private static func unwrap(_ text: String, kek: SymmetricKey, label: [UInt8], file: String) throws -> SymmetricKey {
        guard let sealed = Data(base64Encoded: text) else { throw KeyRingError(.damaged, "\(file) holds a malformed key") }
        do {
            return SymmetricKey(try AESGCM.open(sealed, using: kek, authenticating: label))
        } catch {
            throw KeyRingError(.damaged, "\(file) holds a key that fails authentication")
        }
    }

    private static func write(_ state: State, to path: String, exclusive: Bool = false) throws {
        var entries: [KeyRingFile.Entry] = []
        for info in state.infos {
            let wrapped = try state.keys[info.version].map { try wrap($0, kek: state.kek, label: dekLabel(info.version)) }
            entries.append(
                KeyRingFile.Entry(version: info.version, created: Int64(info.created.timeIntervalSince1970), wrapped: wrapped))
        }
        let file = KeyRingFile(
            format: 1,
            kekCheck: Data(kekCheck(state.kek)).base64EncodedString(),
            fingerprintSecret: try wrap(state.fingerprintSecret, kek: state.kek, label: fingerprintLabel),
            dataKeys: entries)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(file)
        try KeyFile.writeAtomically(path, data, exclusive: exclusive)
    }
}
