import CPKCS11
public import VaultCore

/// A failure of the hardware custody of the master key. Equal by code; messages name the module, token and key
/// labels and the PKCS#11 return value, never the PIN or key bytes.
public struct HSMError: CodedError, Equatable {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        public var description: String { name }

        /// The PKCS#11 module cannot be loaded or initialized (the message names its path).
        public static let moduleUnavailable = Code(name: "moduleUnavailable")
        /// No present token has the label asked for.
        public static let tokenNotFound = Code(name: "tokenNotFound")
        /// The token refused the PIN (CKR_PIN_INCORRECT, CKR_PIN_INVALID, CKR_PIN_LEN_RANGE).
        public static let pinIncorrect = Code(name: "pinIncorrect")
        /// The token's user PIN is locked (CKR_PIN_LOCKED).
        public static let pinLocked = Code(name: "pinLocked")
        /// The token holds no AES key with the label asked for.
        public static let keyNotFound = Code(name: "keyNotFound")
        /// The token holds a key with that label already; generating another is refused.
        public static let keyExists = Code(name: "keyExists")
        /// More than one token, or more than one key, has the label asked for.
        public static let ambiguous = Code(name: "ambiguous")
        /// An argument CardVault never passes (an empty label).
        public static let invalidArgument = Code(name: "invalidArgument")
        /// A PKCS#11 call failed; the message names the call and its return value.
        public static let operationFailed = Code(name: "operationFailed")
    }

    public let code: Code
    public let message: String
    public let location: SourceLocation

    public init(_ code: Code, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.location = SourceLocation(file: file, line: line)
    }

    public static func == (lhs: HSMError, rhs: HSMError) -> Bool { lhs.code == rhs.code }

    /// `function` answered `rv`: an ``Code/operationFailed`` naming both.
    static func failed(_ function: String, _ rv: CK_RV, file: String = #fileID, line: Int = #line) -> HSMError {
        HSMError(.operationFailed, "\(function) failed: \(returnValueName(rv))", file: file, line: line)
    }
}

/// A PKCS#11 return value as its name and hexadecimal value: `CKR_PIN_INCORRECT (0xa0)`.
func returnValueName(_ rv: CK_RV) -> String {
    let hex = "0x" + String(rv, radix: 16)
    guard let name = cv_p11_rv_name(rv) else { return "vendor or unknown value (\(hex))" }
    return "\(String(cString: name)) (\(hex))"
}
