public import VaultCore

/// A failure in a cryptographic operation. Equal by code; the message never holds key material.
public struct CryptoError: CodedError, Equatable {
    /// What went wrong, as an opaque code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        public var description: String { name }

        /// Authentication of a sealed box failed: it was tampered with, or key or AAD differ.
        public static let authenticationFailed = Code(name: "authenticationFailed")
        /// A key of the wrong length was given.
        public static let invalidKeySize = Code(name: "invalidKeySize")
        /// A nonce of the wrong length was given.
        public static let invalidNonceSize = Code(name: "invalidNonceSize")
        /// A sealed box too short to hold a nonce and a tag.
        public static let malformedSealedBox = Code(name: "malformedSealedBox")
        /// OpenSSL reported an internal failure.
        public static let openSSLFailure = Code(name: "openSSLFailure")
        /// A requested output length is out of range.
        public static let invalidLength = Code(name: "invalidLength")
    }

    public let code: Code
    public let message: String
    public let location: SourceLocation

    public init(_ code: Code, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.location = SourceLocation(file: file, line: line)
    }

    public static func == (lhs: CryptoError, rhs: CryptoError) -> Bool { lhs.code == rhs.code }
}
