import CPKCS11
import VaultCore
import VaultCrypto

/// A PKCS#11 module loaded into this process, shared by every session on it.
///
/// A module is initialized once per process, so the first ``acquire(path:)`` of a library loads and initializes
/// it and the last ``release()`` finalizes and unloads it (SoftHSM must be finalized before the process exits).
/// Two paths to one library (a symbolic link) share one module. Its login state is per token and shared by all
/// of the process's sessions on that token: ``login(session:slot:pin:tokenLabel:)`` and
/// ``logout(session:slot:)`` count them, and only the last session to leave logs the token out.
///
/// Unchecked Sendable: `handle` is immutable and the module is initialized with CKF_OS_LOCKING_OK (it locks
/// itself); `uses` is read and written under the lock of `loaded` only.
final class PKCS11Module: @unchecked Sendable {
    /// The shim's module (for ``PKCS11Session``'s calls).
    let handle: OpaquePointer
    /// Whether this process's C_Initialize started the module (not someone else's in the same process).
    private let initializedHere: Bool
    private var uses = 1
    /// Logged-in sessions per slot.
    private let logins = Locked<[CK_SLOT_ID: Int]>([:])

    private static let loaded = Locked<[PKCS11Module]>([])

    private init(handle: OpaquePointer, initializedHere: Bool) {
        self.handle = handle
        self.initializedHere = initializedHere
    }

    /// How many modules this process has loaded (for tests).
    static var loadedCount: Int { loaded.withLock { $0.count } }

    /// The module at `path` (absolute), loaded and initialized if this process does not use it yet.
    static func acquire(path: String) throws -> PKCS11Module {
        guard path.hasPrefix("/") else {
            throw HSMError(.moduleUnavailable, "the PKCS#11 module path must be absolute: \(path)")
        }
        return try loaded.withLock { modules in
            var reason = [CChar](repeating: 0, count: 512)
            guard let handle = cv_p11_load(path, &reason, reason.count) else {
                let detail = String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                throw HSMError(.moduleUnavailable, "cannot load the PKCS#11 module \(path): \(detail)")
            }
            if let module = modules.first(where: { cv_p11_same_library($0.handle, handle) != 0 }) {
                cv_p11_unload(handle)  // the second dlopen's reference; the module keeps its own
                module.uses += 1
                return module
            }
            let rv = cv_p11_initialize(handle)
            guard rv == CKR_OK || rv == CKR_CRYPTOKI_ALREADY_INITIALIZED else {
                cv_p11_unload(handle)
                throw HSMError(
                    .moduleUnavailable, "the PKCS#11 module \(path) did not initialize: \(returnValueName(rv))")
            }
            let module = PKCS11Module(handle: handle, initializedHere: rv == CKR_OK)
            modules.append(module)
            return module
        }
    }

    /// Ends one use; the last finalizes the module (if this process initialized it) and unloads it.
    func release() {
        Self.loaded.withLock { modules in
            uses -= 1
            guard uses == 0 else { return }
            modules.removeAll { $0 === self }
            if initializedHere { _ = cv_p11_finalize(handle) }
            cv_p11_unload(handle)
        }
    }

    /// The slot of the one present token labelled `label`.
    func slot(tokenLabel label: String) throws -> CK_SLOT_ID {
        let bytes = Array(label.utf8)
        guard (1...32).contains(bytes.count) else {
            throw HSMError(.tokenNotFound, "no token can be labelled '\(label)' (a label has 1 to 32 bytes)")
        }
        var slot: CK_SLOT_ID = 0
        var matches = 0
        let rv = cv_p11_find_token(handle, bytes, bytes.count, &slot, &matches)
        guard rv == CKR_OK else { throw HSMError.failed("C_GetSlotList/C_GetTokenInfo", rv) }
        switch matches {
        case 0: throw HSMError(.tokenNotFound, "no token labelled '\(label)' is present")
        case 1: return slot
        default: throw HSMError(.ambiguous, "more than one token is labelled '\(label)'")
        }
    }

    /// A new serial session on `slot`, read-write when `readWrite`.
    func openSession(slot: CK_SLOT_ID, readWrite: Bool) throws -> CK_SESSION_HANDLE {
        var session: CK_SESSION_HANDLE = 0
        let rv = cv_p11_open_session(handle, slot, readWrite ? 1 : 0, &session)
        guard rv == CKR_OK else { throw HSMError.failed("C_OpenSession", rv) }
        return session
    }

    func closeSession(_ session: CK_SESSION_HANDLE) {
        _ = cv_p11_close_session(handle, session)
    }

    /// Logs the user in with `pin`, or counts one more session when the process is logged in to the token
    /// already (the token then does not check the PIN again).
    func login(session: CK_SESSION_HANDLE, slot: CK_SLOT_ID, pin: SecureBytes, tokenLabel: String) throws(HSMError) {
        try logins.withLock { (logins: inout [CK_SLOT_ID: Int]) throws(HSMError) in
            let rv = pin.withUnsafeBytes {
                cv_p11_login(handle, session, $0.bindMemory(to: UInt8.self).baseAddress, $0.count)
            }
            switch rv {
            case CKR_OK, CKR_USER_ALREADY_LOGGED_IN:
                logins[slot, default: 0] += 1
            case CKR_PIN_INCORRECT, CKR_PIN_INVALID, CKR_PIN_LEN_RANGE:
                throw HSMError(.pinIncorrect, "token '\(tokenLabel)' refused the PIN: \(returnValueName(rv))")
            case CKR_PIN_LOCKED:
                throw HSMError(.pinLocked, "the user PIN of token '\(tokenLabel)' is locked: \(returnValueName(rv))")
            default:
                throw HSMError.failed("C_Login", rv)
            }
        }
    }

    /// Counts one session less; the last logs the token out.
    func logout(session: CK_SESSION_HANDLE, slot: CK_SLOT_ID) {
        logins.withLock { logins in
            let remaining = (logins[slot] ?? 1) - 1
            logins[slot] = remaining > 0 ? remaining : nil
            if remaining == 0 { _ = cv_p11_logout(handle, session) }
        }
    }
}
