public import Foundation
import Synchronization
public import VaultCore

/// A failure of the keyring, its files or its custody (key shares). Equal by code; messages name files and share
/// indexes, never key bytes.
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
        /// More seals were asked for at once than one data key may ever make (``KeyRotationPolicy``).
        public static let sealLimit = Code(name: "sealLimit")
        /// A key share's text is not a share (`cvs1-K-I-<64 hex digits>-<6 hex digits>`).
        public static let malformedShare = Code(name: "malformedShare")
        /// A share's bytes do not match its own check value: mistyped.
        public static let checkValue = Code(name: "checkValue")
        /// A share with this index was given already.
        public static let repeatedIndex = Code(name: "repeatedIndex")
        /// A share belongs to a split with another threshold.
        public static let thresholdMismatch = Code(name: "thresholdMismatch")
        /// Enough shares were given, but they rebuild another key than this vault's.
        public static let wrongKey = Code(name: "wrongKey")
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
    /// AES-GCM seals made under this version: an upper bound, never less than the real number.
    /// Seals are reserved in blocks written to the keyring before they are used, and a reopened
    /// keyring counts every reserved seal as used, so a crash can only overcount.
    public var seals: UInt64

    public init(version: UInt32, created: Date, retired: Bool, seals: UInt64 = 0) {
        self.version = version
        self.created = created
        self.retired = retired
        self.seals = seals
    }
}

/// When the keyring replaces the current data key by itself.
///
/// Data keys seal with random 96-bit nonces, for which NIST SP 800-38D (section 8.3) allows at most
/// 2^32 seals per key; the default limit is 2^30, well under it.
public struct KeyRotationPolicy: Sendable, Equatable {
    /// The default seal limit per data key version: 2^30.
    public static let defaultMaximumSeals: UInt64 = 1 << 30
    /// The highest seal limit accepted: 2^32 (the NIST bound itself).
    public static let maximumSealLimit: UInt64 = 1 << 32
    /// The default age limit: 90 days.
    public static let defaultMaximumAge: TimeInterval = 90 * 86_400
    /// The default reservation block: 2^16 seals, one keyring write per 65,536 seals.
    public static let defaultReservationBlock: UInt64 = 1 << 16

    /// A data key version seals at most this many values; the seal that would pass it goes to a new version.
    public var maximumSeals: UInt64
    /// A data key version older than this is replaced before its next seal; nil: no age limit.
    public var maximumAge: TimeInterval?
    /// Seals are reserved (written to the keyring) this many at a time. A crash overcounts by at most
    /// one block per version; a smaller block writes the keyring more often.
    public var reservationBlock: UInt64

    public init(
        maximumSeals: UInt64 = defaultMaximumSeals, maximumAge: TimeInterval? = defaultMaximumAge,
        reservationBlock: UInt64 = defaultReservationBlock
    ) {
        self.maximumSeals = min(max(maximumSeals, 1), Self.maximumSealLimit)
        self.maximumAge = maximumAge
        self.reservationBlock = max(reservationBlock, 1)
    }
}

/// Why the keyring rotated by itself.
public enum AutomaticRotationReason: String, Sendable, Equatable {
    /// The current version reached its seal limit.
    case seals
    /// The current version reached its age limit.
    case age
}

/// A rotation the keyring made by itself while reserving seals (for the caller to log).
public struct AutomaticRotation: Sendable, Equatable {
    public var previous: DataKeyInfo
    public var next: DataKeyInfo
    public var reason: AutomaticRotationReason
}

/// Seals granted by ``KeyRing/reserveSeals(_:)``: the key to seal them under.
public struct SealReservation: Sendable {
    public var version: UInt32
    public var key: SymmetricKey
    /// Set when the current version was replaced to grant these seals.
    public var rotation: AutomaticRotation?
}

/// The keys of one data directory: versioned data keys (DEKs) and a fingerprint secret wrapped in
/// `<data>/keyring.json` by the master key-encryption key (KEK), which is given to ``open`` (rebuilt from shares,
/// or in an HSM) or read from the development key file `<keys>/master.key` (docs/key-custody.md).
///
/// New writes use ``reserveSeals(_:)``, which counts the seals of each version and replaces the
/// current one when it reaches the ``KeyRotationPolicy`` limits; every unretired version still
/// decrypts. ``rotate()`` adds a version, ``rotateMaster()`` re-wraps everything under a fresh KEK, ``retire(version:)`` drops a
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
        var kek: any KeyEncryptionKey
        var keys: [UInt32: SymmetricKey]
        var infos: [DataKeyInfo]
        var current: UInt32
        var fingerprintSecret: SymmetricKey
        /// Seals used per version since open (starting at the persisted reservation).
        var used: [UInt32: UInt64] = [:]
        /// Seals reserved per version, as the keyring file says.
        var reserved: [UInt32: UInt64] = [:]
        /// The wrapped form of each data key and of the fingerprint secret under `kek`, kept so that a
        /// reservation rewrites the file without wrapping every key again.
        var wrapped: [UInt32: String] = [:]
        var wrappedSecret: String?
    }

    private let state: Locked<State>
    private let clock: any WallClock
    /// The limits ``reserveSeals(_:)`` rotates at.
    public let policy: KeyRotationPolicy

    private init(
        dataDirectory: String, keysDirectory: String, state: State, clock: any WallClock, policy: KeyRotationPolicy
    ) {
        self.dataDirectory = dataDirectory
        self.keysDirectory = keysDirectory
        self.fingerprintKeys = DerivedFingerprintKeys(secret: state.fingerprintSecret)
        self.state = Locked(state)
        self.clock = clock
        self.policy = policy
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
    public static func createMasterKey(
        keysDirectory: String, random: any RandomSource = RandomPool.shared
    ) throws -> Bool {
        try createKeysDirectory(keysDirectory)
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

    /// Creates the keys directory, private (0700), or tightens an existing one to 0700.
    public static func createKeysDirectory(_ keysDirectory: String) throws {
        try KeyFile.makeDirectory(keysDirectory)
        guard chmod(keysDirectory, 0o700) == 0 else {
            throw KeyRingError(
                .io, "cannot make \(keysDirectory) private (chmod 700): \(String(cString: strerror(errno)))")
        }
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
    /// - Parameter masterKey: the master key in hand (rebuilt from shares, or in an HSM); nil reads the development
    ///   key file `<keysDirectory>/master.key`.
    public static func open(
        dataDirectory: String, keysDirectory: String, masterKey: (any KeyEncryptionKey)? = nil,
        clock: any WallClock = SystemClock(), policy: KeyRotationPolicy = KeyRotationPolicy()
    ) throws -> KeyRing {
        let masterPath = masterKeyPath(keysDirectory)
        var kek: any KeyEncryptionKey = try masterKey ?? MemoryKeyEncryptionKey(readMasterKey(masterPath))
        let ringPath = (dataDirectory as NSString).appendingPathComponent(keyRingFileName)
        guard let data = try KeyFile.readFile(ringPath) else {
            let dek = SymmetricKey.random()
            let secret = SymmetricKey.random()
            let info = DataKeyInfo(version: 1, created: clock.now, retired: false)
            var state = State(kek: kek, keys: [1: dek], infos: [info], current: 1, fingerprintSecret: secret)
            try write(&state, to: ringPath, exclusive: true)
            return KeyRing(
                dataDirectory: dataDirectory, keysDirectory: keysDirectory, state: state, clock: clock, policy: policy)
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
        if !ConstantTime.equals(try kek.checkValue(), check) {
            // An interrupted master rotation of a key file: the keyring is already under the next key.
            let nextPath = masterPath + ".next"
            if masterKey == nil, access(nextPath, F_OK) == 0,
                let next = try? MemoryKeyEncryptionKey(readMasterKey(nextPath)),
                ConstantTime.equals(try next.checkValue(), check)
            {
                try KeyFile.destroy(masterPath)
                try KeyFile.replace(nextPath, with: masterPath)
                kek = next
            } else if masterKey == nil {
                throw KeyRingError(.wrongMasterKey, "\(masterPath) is not the master key of \(dataDirectory)")
            } else {
                throw KeyRingError(.wrongMasterKey, "this master key does not open the keyring of \(dataDirectory)")
            }
        }
        var keys: [UInt32: SymmetricKey] = [:]
        var infos: [DataKeyInfo] = []
        var reserved: [UInt32: UInt64] = [:]
        var wrappedKeys: [UInt32: String] = [:]
        for entry in file.dataKeys {
            // Every seal reserved before the last close (or crash) counts as made.
            let seals = entry.seals ?? 0
            reserved[entry.version] = seals
            infos.append(
                DataKeyInfo(
                    version: entry.version, created: Date(timeIntervalSince1970: TimeInterval(entry.created)),
                    retired: entry.wrapped == nil, seals: seals))
            if let wrapped = entry.wrapped {
                keys[entry.version] = try unwrap(wrapped, kek: kek, label: dekLabel(entry.version), file: ringPath)
                wrappedKeys[entry.version] = wrapped
            }
        }
        let secret = try unwrap(file.fingerprintSecret, kek: kek, label: fingerprintLabel, file: ringPath)
        guard let current = keys.keys.max() else { throw KeyRingError(.damaged, "\(ringPath) holds no data key") }
        var state = State(kek: kek, keys: keys, infos: infos, current: current, fingerprintSecret: secret)
        state.used = reserved
        state.reserved = reserved
        // A master rotation finished above changed the KEK: the stored wrappings are still valid under
        // it (the file was written under the next key), so they can be kept as they are.
        state.wrapped = wrappedKeys
        state.wrappedSecret = file.fingerprintSecret
        return KeyRing(
            dataDirectory: dataDirectory, keysDirectory: keysDirectory, state: state, clock: clock, policy: policy)
    }

    // MARK: Use

    /// The version and key new writes seal under. Sealing code uses ``reserveSeals(_:)`` instead,
    /// which counts the seals.
    public func currentKey() -> (version: UInt32, key: SymmetricKey) {
        state.withLock { ($0.current, $0.keys[$0.current]!) }
    }

    /// Grants `count` AES-GCM seals under the current data key and returns it. Before granting, the
    /// current version is replaced by a new one (the path of ``rotate()``) when it is older than the
    /// policy's age limit or these seals would take it past its seal limit, so no version ever seals
    /// more than ``KeyRotationPolicy/maximumSeals`` values. When the seals pass what the keyring file
    /// has reserved, a new block is reserved and written (fsynced) before the key is returned, so the
    /// persisted count is never below the seals made, even after a crash. Thread-safe: concurrent
    /// callers are served one at a time.
    /// - Throws: `.sealLimit` when `count` exceeds the seal limit itself, `.io` when the keyring
    ///   cannot be written (nothing is granted then).
    public func reserveSeals(_ count: Int) throws -> SealReservation {
        let wanted = UInt64(max(count, 0))
        let policy = policy
        let now = clock.now
        return try state.withLock { state in
            guard wanted <= policy.maximumSeals else {
                throw KeyRingError(
                    .sealLimit, "\(wanted) seals at once exceed the limit of \(policy.maximumSeals) per data key")
            }
            var next = state
            var rotation: AutomaticRotation?
            if wanted > 0 {
                let current = next.current
                let used = next.used[current] ?? 0
                let previous = next.infos.first { $0.version == current }!
                var reason: AutomaticRotationReason?
                if used + wanted > policy.maximumSeals {
                    reason = .seals
                } else if let age = policy.maximumAge, now.timeIntervalSince(previous.created) >= age {
                    reason = .age
                }
                if let reason {
                    var old = previous
                    old.seals = used
                    let info = Self.addVersion(to: &next, created: now)
                    rotation = AutomaticRotation(previous: old, next: info, reason: reason)
                }
            }
            let version = next.current
            let used = (next.used[version] ?? 0) + wanted
            var mustWrite = rotation != nil
            if used > next.reserved[version] ?? 0 {
                let block = max(policy.reservationBlock, wanted)
                // used <= maximumSeals here (checked above), and block >= wanted, so this covers `used`.
                next.reserved[version] = min(used - wanted + block, policy.maximumSeals)
                mustWrite = true
            }
            if mustWrite { try Self.write(&next, to: ringPath) }
            next.used[version] = used
            state = next
            return SealReservation(version: version, key: next.keys[version]!, rotation: rotation)
        }
    }

    /// Writes the exact seal counts, giving back the unused part of each reservation, so that a clean
    /// restart does not count seals that were never made (a crash still counts them). The record
    /// store calls it when it closes; seals reserved later are counted and reserved as usual.
    public func releaseUnusedSeals() throws {
        try state.withLock { state in
            guard state.reserved.contains(where: { $0.value > (state.used[$0.key] ?? 0) }) else { return }
            var next = state
            next.reserved = next.used
            try Self.write(&next, to: ringPath)
            state = next
        }
    }

    /// Seals counted per version so far (the same upper bound as ``DataKeyInfo/seals``).
    public var sealCounts: [UInt32: UInt64] { state.withLock { $0.used } }

    /// The current data key version.
    public var currentVersion: UInt32 { state.withLock { $0.current } }

    /// The data key of `version`, or nil if unknown or retired.
    public func key(version: UInt32) -> SymmetricKey? {
        state.withLock { $0.keys[version] }
    }

    /// Every data key version, oldest first, with its seal count.
    public var dataKeys: [DataKeyInfo] {
        state.withLock { state in
            state.infos.map { info in
                var info = info
                info.seals = state.used[info.version] ?? 0
                return info
            }
        }
    }

    // MARK: Changes

    /// Adds a data key version; new writes use it from now on. Old versions still decrypt.
    @discardableResult
    public func rotate() throws -> DataKeyInfo {
        try state.withLock { state in
            var next = state
            let info = Self.addVersion(to: &next, created: clock.now)
            try Self.write(&next, to: ringPath)
            state = next
            return info
        }
    }

    /// Adds a fresh data key version to `state` and makes it current (not yet written).
    private static func addVersion(to state: inout State, created: Date) -> DataKeyInfo {
        let version = (state.infos.map(\.version).max() ?? 0) + 1
        let info = DataKeyInfo(version: version, created: created, retired: false)
        state.keys[version] = SymmetricKey.random()
        state.infos.append(info)
        state.current = version
        state.used[version] = 0
        state.reserved[version] = 0
        return info
    }

    /// Re-wraps every data key and the fingerprint secret under a new master key; no old key stays on disk.
    ///
    /// With `replacement` nil (file custody) a fresh key replaces `master.key`: it is written to `master.key.next`,
    /// then the keyring, then the old file is overwritten and unlinked and the new one renamed into place (``open``
    /// finishes a half-done rotation). With a replacement (shares, an HSM) only the keyring is written.
    public func rotateMaster(
        to replacement: (any KeyEncryptionKey)? = nil, random: any RandomSource = RandomPool.shared
    ) throws {
        try state.withLock { state in
            var next = state
            next.wrapped = [:]
            next.wrappedSecret = nil
            guard replacement == nil else {
                next.kek = replacement!
                try Self.write(&next, to: ringPath)
                state = next
                return
            }
            let masterPath = Self.masterKeyPath(keysDirectory)
            let nextPath = masterPath + ".next"
            let material = SecureBytes(count: KeyFile.masterKeySize) { random.fill($0) }
            try material.withUnsafeBytes { try KeyFile.writeAtomically(nextPath, $0) }
            next.kek = MemoryKeyEncryptionKey(SymmetricKey(material))
            try Self.write(&next, to: ringPath)
            try KeyFile.destroy(masterPath)
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
            next.wrapped[version] = nil
            if let index = next.infos.firstIndex(where: { $0.version == version }) { next.infos[index].retired = true }
            try Self.write(&next, to: ringPath)
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
            /// Seals reserved under this version (absent in keyrings written before seals were counted).
            var seals: UInt64?
        }
        var format: Int
        /// The first 16 bytes of HMAC(KEK, label): tells a wrong master key from a damaged file.
        var kekCheck: String
        var fingerprintSecret: String
        var dataKeys: [Entry]
    }

    private static let fingerprintLabel = Array("cardvault fingerprint secret v1".utf8)

    private static func dekLabel(_ version: UInt32) -> [UInt8] { Array("cardvault data key v\(version)".utf8) }

    private static func wrap(_ key: SymmetricKey, kek: any KeyEncryptionKey, label: [UInt8]) throws -> String {
        Data(try kek.wrap(key, label: label)).base64EncodedString()
    }

    private static func unwrap(
        _ text: String, kek: any KeyEncryptionKey, label: [UInt8], file: String
    ) throws -> SymmetricKey {
        guard let sealed = Data(base64Encoded: text) else {
            throw KeyRingError(.damaged, "\(file) holds a malformed key")
        }
        do {
            return try kek.unwrap(Array(sealed), label: label)
        } catch {
            throw KeyRingError(.damaged, "\(file) holds a key that fails authentication")
        }
    }

    /// Writes the keyring atomically, wrapping under the KEK only the keys not wrapped yet.
    private static func write(_ state: inout State, to path: String, exclusive: Bool = false) throws {
        var entries: [KeyRingFile.Entry] = []
        for info in state.infos {
            var wrapped: String?
            if let key = state.keys[info.version] {
                if let cached = state.wrapped[info.version] {
                    wrapped = cached
                } else {
                    let made = try wrap(key, kek: state.kek, label: dekLabel(info.version))
                    state.wrapped[info.version] = made
                    wrapped = made
                }
            }
            entries.append(
                KeyRingFile.Entry(
                    version: info.version, created: Int64(info.created.timeIntervalSince1970), wrapped: wrapped,
                    seals: state.reserved[info.version] ?? 0))
        }
        let secret = try state.wrappedSecret ?? wrap(state.fingerprintSecret, kek: state.kek, label: fingerprintLabel)
        state.wrappedSecret = secret
        let file = KeyRingFile(
            format: 1,
            kekCheck: Data(try state.kek.checkValue()).base64EncodedString(),
            fingerprintSecret: secret,
            dataKeys: entries)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(file)
        try KeyFile.writeAtomically(path, data, exclusive: exclusive)
    }
}
