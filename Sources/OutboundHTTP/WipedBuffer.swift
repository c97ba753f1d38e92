#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A growable byte buffer for data that may hold card numbers or security codes: every allocation it gives up
/// (on growth, on ``wipe()`` and on release) is zeroed first, and it never copies itself implicitly (it is a
/// class). Outbound request bodies and header values are built in one, and responses are received into one.
///
/// One owner at a time: it is handed from the task that builds it to the transfer loop and back, never shared by
/// two threads at once, which is why it may be `Sendable`.
public final class WipedBuffer: @unchecked Sendable, CustomStringConvertible {
    private var base: UnsafeMutablePointer<UInt8>?
    private var capacity: Int
    /// The bytes in use.
    public private(set) var count: Int

    /// An empty buffer with room for `capacity` bytes.
    public init(capacity: Int = 0) {
        self.capacity = max(capacity, 0)
        self.count = 0
        self.base = self.capacity > 0 ? UnsafeMutablePointer<UInt8>.allocate(capacity: self.capacity) : nil
    }

    /// A buffer holding a copy of `bytes` (the caller stays responsible for its own copy).
    public convenience init(copying bytes: some Collection<UInt8>) {
        self.init(capacity: bytes.count)
        append(contentsOf: bytes)
    }

    deinit { release() }

    private func release() {
        if let base {
            explicit_bzero(base, capacity)
            base.deallocate()
        }
        base = nil
        capacity = 0
        count = 0
    }

    /// Zeroes and frees the bytes now (the buffer is empty afterwards).
    public func wipe() { release() }

    private func reserve(_ needed: Int) {
        guard needed > capacity else { return }
        var newCapacity = max(capacity * 2, 64)
        while newCapacity < needed { newCapacity *= 2 }
        let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        if let base {
            grown.update(from: base, count: count)
            explicit_bzero(base, capacity)
            base.deallocate()
        }
        base = grown
        capacity = newCapacity
    }

    /// Appends `bytes`.
    public func append(contentsOf bytes: some Collection<UInt8>) {
        let added = bytes.count
        guard added > 0 else { return }
        reserve(count + added)
        var index = count
        for byte in bytes {
            base![index] = byte
            index += 1
        }
        count = index
    }

    /// Appends `length` bytes from `pointer`.
    public func append(_ pointer: UnsafeRawPointer, length: Int) {
        guard length > 0 else { return }
        reserve(count + length)
        (base! + count).update(from: pointer.assumingMemoryBound(to: UInt8.self), count: length)
        count += length
    }

    /// Appends one byte.
    public func append(_ byte: UInt8) {
        reserve(count + 1)
        base![count] = byte
        count += 1
    }

    /// Appends the bytes of another buffer.
    public func append(_ other: WipedBuffer) {
        other.withUnsafeBytes { raw in
            if let address = raw.baseAddress { append(address, length: raw.count) }
        }
    }

    /// Reads the bytes in place.
    public func withUnsafeBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        try body(UnsafeBufferPointer(start: base, count: count))
    }

    /// The bytes with a NUL after them, for C functions that copy a string (libcurl's header list).
    func withCString<Result>(_ body: (UnsafePointer<CChar>) throws -> Result) rethrows -> Result {
        reserve(count + 1)
        base![count] = 0
        return try base!.withMemoryRebound(to: CChar.self, capacity: count + 1) { try body($0) }
    }

    /// The address of the bytes, valid until the buffer next changes or is released (libcurl's request body).
    var baseAddress: UnsafeRawPointer? { UnsafeRawPointer(base) }

    /// True when the bytes contain `byte`.
    public func contains(_ byte: UInt8) -> Bool {
        withUnsafeBytes { $0.contains(byte) }
    }

    /// Never the bytes.
    public var description: String { "WipedBuffer(\(count) bytes)" }
}
