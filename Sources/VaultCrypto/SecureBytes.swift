import COpenSSL

/// A fixed-size byte buffer for secrets: allocated once, never copied by the value semantics of
/// arrays, kept out of core dumps (and locked in RAM where the memlock limit allows: see
/// ``SecureMemory``), and cleansed with `OPENSSL_cleanse` when its last reference goes away.
public struct SecureBytes: Sendable {
    /// The owner of the allocation; wipes it in `deinit` and gives it back to the arena.
    /// Unchecked Sendable: the pointers are immutable; the bytes are written while the value is built and wiped
    /// in `deinit`, when no other reference exists.
    final class Storage: @unchecked Sendable {
        /// The arena's whole block (at least `count` bytes).
        let block: UnsafeMutableRawBufferPointer
        /// The bytes in use: the first `max(count, 1)` of the block.
        let pointer: UnsafeMutableRawBufferPointer

        init(count: Int) {
            block = SecureMemory.shared.allocate(Swift.max(count, 1))
            pointer = UnsafeMutableRawBufferPointer(rebasing: block[0..<Swift.max(count, 1)])
            pointer.initializeMemory(as: UInt8.self, repeating: 0)
        }

        deinit {
            OPENSSL_cleanse(pointer.baseAddress, pointer.count)
            SecureMemory.shared.release(block)
        }
    }

    let storage: Storage
    /// The number of bytes held.
    public let count: Int

    /// A zero-filled buffer of `count` bytes.
    public init(count: Int) {
        storage = Storage(count: count)
        self.count = count
    }

    /// A buffer of `count` bytes, filled by `initializer` before anyone else sees it.
    public init(count: Int, initializer: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        storage = Storage(count: count)
        self.count = count
        try initializer(UnsafeMutableRawBufferPointer(rebasing: storage.pointer[0..<count]))
    }

    /// Copies `bytes` into a new secure buffer. The caller remains responsible for its own copy.
    public init(copying bytes: some Collection<UInt8>) {
        self.init(count: bytes.count) { buffer in
            _ = buffer.initializeMemory(as: UInt8.self, from: bytes)
        }
    }

    /// Reads the bytes without copying them out.
    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(rebasing: storage.pointer[0..<count]))
    }
}

extension SecureBytes: CustomStringConvertible, CustomDebugStringConvertible {
    public var description: String { "SecureBytes(\(count) bytes)" }
    public var debugDescription: String { description }
}
