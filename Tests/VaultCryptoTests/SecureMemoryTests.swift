import Foundation
import Testing

@testable import VaultCrypto

@Suite struct SecureMemoryTests {
    /// The VmFlags of the mapping holding `address`, from /proc/self/smaps.
    static func mappingFlags(of address: UInt) -> [String] {
        // Read with read(2): /proc files report size 0, which Foundation's whole-file readers trust.
        let fd = open("/proc/self/smaps", O_RDONLY)
        #expect(fd >= 0)
        defer { close(fd) }
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let got = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if got <= 0 { break }
            data += chunk[0..<got]
        }
        let smaps = String(decoding: data, as: UTF8.self)
        var inside = false
        for line in smaps.split(separator: "\n") {
            let first = line.split(separator: " ").first ?? ""
            let bounds = first.split(separator: "-")
            if bounds.count == 2, let low = UInt(bounds[0], radix: 16), let high = UInt(bounds[1], radix: 16) {
                inside = low <= address && address < high
            } else if inside && line.hasPrefix("VmFlags:") {
                return line.split(separator: " ").dropFirst().map(String.init)
            }
        }
        return []
    }

    /// Whether this process runs under AddressSanitizer or ThreadSanitizer (a runtime is linked in).
    static let underSanitizer = ["__asan_init", "__tsan_init"].contains { (name: String) in
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) != nil
    }

    @Test(arguments: [1, 32, 33, 100, 4096, 4097, 70_000])
    func blocksAreZeroedAlignedAndExcludedFromDumps(count: Int) throws {
        let bytes = SecureBytes(count: count) { buffer in
            for index in buffer.indices { buffer[index] = 0xA5 }
        }
        let address = bytes.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
        #expect(address % 16 == 0)
        #expect(bytes.withUnsafeBytes { $0.count } == count)
        let flags = Self.mappingFlags(of: address)
        #expect(flags.contains("dd"), "MADV_DONTDUMP missing: \(flags)")
        // The sanitizers' runtimes replace mlock with a no-op (make test-sanitize), so pinning is checked only
        // without them.
        if geteuid() == 0 && !Self.underSanitizer { #expect(flags.contains("lo"), "not mlock-ed: \(flags)") }
        let fresh = SecureBytes(count: count)
        #expect(fresh.withUnsafeBytes { $0.allSatisfy { $0 == 0 } })
    }

    @Test func aReleasedBufferIsWipedWhereItLay() throws {
        // 3000 bytes: the 4096-byte class, whose chunks stay mapped after release. The secret is a random 16-byte
        // pattern, repeated, and the check looks for that pattern: a released block holds the arena's free-list
        // link, an address whose bytes can be anything (a filler byte of 0x5A was once among them), and another
        // allocation may take the block at once and write its own bytes, but neither writes this pattern.
        let pattern = (0..<16).map { _ in UInt8.random(in: 0...255) }
        var address: UInt = 0
        do {
            let secret = SecureBytes(count: 3000) { buffer in
                for index in buffer.indices { buffer[index] = pattern[index % 16] }
            }
            address = secret.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
        }
        #expect(address != 0)
        let view = UnsafeRawBufferPointer(start: UnsafeRawPointer(bitPattern: address), count: 3000)
        let left = stride(from: 0, to: 3000 - 15, by: 16).filter { view[$0..<$0 + 16].elementsEqual(pattern) }
        #expect(left.isEmpty, "\(left.count) copies of the secret's pattern left")
    }

    @Test func sizeClasses() {
        #expect(SecureMemory.sizeClass(for: 1) == 0)
        #expect(SecureMemory.sizeClass(for: 32) == 0)
        #expect(SecureMemory.sizeClass(for: 33) == 1)
        #expect(SecureMemory.sizeClass(for: 4096) == SecureMemory.sizeClasses.count - 1)
        #expect(SecureMemory.sizeClass(for: 4097) == nil)
    }

    @Test func blocksAreReusedAndLargeBuffersUnmapped() {
        let arena = SecureMemory()
        let small = arena.allocate(20)
        #expect(small.count == 32)
        #expect(arena.statistics.mappedBytes == SecureMemory.chunkBytes)
        arena.release(small)
        let again = arena.allocate(31)
        #expect(again.baseAddress == small.baseAddress)  // from the free list, no new chunk
        #expect(arena.statistics.mappedBytes == SecureMemory.chunkBytes)
        let large = arena.allocate(100_000)
        #expect(large.count % arena.pageSize == 0 && large.count >= 100_000)
        #expect(arena.statistics.mappedBytes == SecureMemory.chunkBytes + large.count)
        if geteuid() == 0 { #expect(arena.statistics.lockedBytes == arena.statistics.mappedBytes) }
        arena.release(large)
        #expect(arena.statistics.mappedBytes == SecureMemory.chunkBytes)
        #expect(arena.statistics.dumpableMappings == 0)
    }
}
