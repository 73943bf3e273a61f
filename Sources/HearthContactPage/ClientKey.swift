import NIOCore

/// Whom a request to the page is counted against: an IPv4 address, or the /64 an IPv6 address
/// is in (a single host is usually handed a whole /64, so its addresses are one client).
/// IPv4-mapped IPv6 addresses (`::ffff:192.0.2.1`, from a listener on `::`) count as IPv4.
struct ClientKey: Hashable, Sendable, CustomStringConvertible {
    /// The IPv4 address, or the first 64 bits of the IPv6 one, most significant byte first.
    let bits: UInt64
    let isIPv6: Bool

    init(ipv4 bits: UInt32) {
        self.bits = UInt64(bits)
        self.isIPv6 = false
    }

    init(ipv6Prefix bits: UInt64) {
        self.bits = bits
        self.isIPv6 = true
    }

    /// Every peer without an IP address (a Unix socket): one client.
    static let unknown = ClientKey(ipv6Prefix: 0)

    /// The client at `address`; ``unknown`` for an address without an IP.
    init(_ address: SocketAddress) {
        // The address's bytes, read where the socket structures keep them (on Linux and the BSDs
        // alike): `sin_addr` at byte 4 of a `sockaddr_in`, `sin6_addr` at byte 8 of a `sockaddr_in6`.
        switch address {
        case .v4(let v4):
            self.init(ipv4: UInt32(Self.number(withUnsafeBytes(of: v4.address) { Array($0[4..<8]) })))
        case .v6(let v6):
            let bytes = withUnsafeBytes(of: v6.address) { Array($0[8..<24]) }
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
                self.init(ipv4: UInt32(Self.number(bytes[12..<16])))
            } else {
                self.init(ipv6Prefix: Self.number(bytes[0..<8]))
            }
        case .unixDomainSocket:
            self.init(ipv6Prefix: 0)
        }
    }

    /// The client a trusted proxy names in `X-Forwarded-For`: the last address of the last
    /// field, the one that proxy added itself (those before it came from the client, who can
    /// write anything there). An address may carry a port (`192.0.2.1:5000`, `[2001:db8::1]:443`).
    /// Nil when there is no field or its last entry is no IP address.
    init?(forwardedFor fields: [String]) {
        guard let last = fields.joined(separator: ",").split(separator: ",").last else { return nil }
        var text = last.drop(while: \.isWhitespace)
        while text.last?.isWhitespace == true { text = text.dropLast() }
        if text.first == "[", let end = text.firstIndex(of: "]") {
            text = text[text.index(after: text.startIndex)..<end]
        } else if text.count(where: { $0 == ":" }) == 1, let colon = text.firstIndex(of: ":") {
            text = text[..<colon]
        }
        guard !text.isEmpty, let address = try? SocketAddress(ipAddress: String(text), port: 0) else {
            return nil
        }
        self.init(address)
    }

    var description: String {
        guard self.isIPv6 else {
            return (0..<4).reversed().map { String((self.bits >> ($0 * 8)) & 0xFF) }.joined(separator: ".")
        }
        let groups = (0..<4).reversed().map { String((self.bits >> ($0 * 16)) & 0xFFFF, radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }

    /// `bytes` as one big-endian number (at most 8 of them).
    private static func number(_ bytes: some Collection<UInt8>) -> UInt64 {
        bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }
}
