import NIOCore

/// What a peer's connections are counted under for the per-address cap: its IPv4 address (an
/// IPv4-mapped IPv6 address folded into it), or its IPv6 /64, since one host is commonly given
/// a whole /64 and could otherwise open the cap's worth from each of its addresses. Behind a
/// proxy or a load balancer that does not keep client addresses, every client is the proxy.
enum PeerAddressKey {
    static func of(_ address: SocketAddress?) -> String {
        switch address {
        case .v4:
            return address?.ipAddress ?? "unknown"
        case .v6(let v6):
            // sockaddr_in6: family (2 bytes), port (2), flow info (4), then the 16 address bytes.
            let bytes = withUnsafeBytes(of: v6.address) { Array($0[8..<24]) }
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff {
                return "\(bytes[12]).\(bytes[13]).\(bytes[14]).\(bytes[15])"
            }
            let groups = stride(from: 0, to: 8, by: 2).map {
                String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16)
            }
            return groups.joined(separator: ":") + "::/64"
        case .unixDomainSocket, nil:
            return "unknown"
        }
    }
}
