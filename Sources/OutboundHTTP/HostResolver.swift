import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Resolves host names to addresses for the outbound client, which checks them against its ``AddressPolicy``
/// and then pins libcurl to exactly those (`CURLOPT_RESOLVE`), so a second lookup (DNS rebinding) cannot send
/// the request elsewhere.
public protocol HostResolving: Sendable {
    /// The addresses of `host` (a name or an IP literal, IPv6 without brackets).
    func addresses(of host: String) async throws(OutboundHTTPError) -> [IPAddress]
}

/// The system resolver (`getaddrinfo`), run on a thread of its own so that a slow DNS server never holds one of
/// the few threads of Swift's cooperative pool.
public struct SystemHostResolver: HostResolving {
    public init() {}

    public func addresses(of host: String) async throws(OutboundHTTPError) -> [IPAddress] {
        if let literal = IPAddress(host) { return [literal] }
        let found: [IPAddress] = await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: Self.lookUp(host))
            }
            thread.stackSize = 256 << 10
            thread.start()
        }
        guard !found.isEmpty else {
            throw OutboundHTTPError(.unresolvable, "the destination host cannot be resolved")
        }
        return found
    }

    static func lookUp(_ host: String) -> [IPAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0 else { return [] }
        defer { freeaddrinfo(list) }
        var addresses: [IPAddress] = []
        var entry = list
        while let current = entry {
            if let socketAddress = current.pointee.ai_addr, let address = IPAddress(socketAddress: socketAddress),
                !addresses.contains(address)
            {
                addresses.append(address)
            }
            entry = current.pointee.ai_next
        }
        return addresses
    }
}
