import CPKCS11
import VaultCore
import VaultCrypto

/// One session on a token, with the use of its module: closing it logs out (when it is the process's last
/// logged-in session on the token), closes the session and releases the module (finalized with its last use).
///
/// A PKCS#11 session is not thread-safe: ``perform(_:)`` runs one call at a time.
final class PKCS11Session: Sendable {
    private struct State: Sendable {
        let handle: CK_SESSION_HANDLE
        var loggedIn = false
    }

    let module: PKCS11Module
    let slot: CK_SLOT_ID
    let tokenLabel: String
    private let state: Locked<State>

    private init(module: PKCS11Module, slot: CK_SLOT_ID, handle: CK_SESSION_HANDLE, tokenLabel: String) {
        self.module = module
        self.slot = slot
        self.tokenLabel = tokenLabel
        self.state = Locked(State(handle: handle))
    }

    /// Loads the module at `modulePath` (once per process) and opens a session on the token `tokenLabel`.
    static func open(modulePath: String, tokenLabel: String, readWrite: Bool) throws -> PKCS11Session {
        let module = try PKCS11Module.acquire(path: modulePath)
        do {
            let slot = try module.slot(tokenLabel: tokenLabel)
            let handle = try module.openSession(slot: slot, readWrite: readWrite)
            return PKCS11Session(module: module, slot: slot, handle: handle, tokenLabel: tokenLabel)
        } catch {
            module.release()
            throw error
        }
    }

    deinit {
        let state = self.state.withLock { $0 }
        if state.loggedIn { module.logout(session: state.handle, slot: slot) }
        module.closeSession(state.handle)
        module.release()
    }

    /// Logs the normal user in with `pin`.
    func login(pin: SecureBytes) throws {
        try state.withLock { (state: inout State) throws(HSMError) in
            try module.login(session: state.handle, slot: slot, pin: pin, tokenLabel: tokenLabel)
            state.loggedIn = true
        }
    }

    /// Runs `body` with the shim's module and this session's handle, one call at a time.
    func perform<Result: Sendable>(
        _ body: (OpaquePointer, CK_SESSION_HANDLE) throws -> Result
    ) throws -> Result {
        try state.withLock { state in try body(module.handle, state.handle) }
    }
}
