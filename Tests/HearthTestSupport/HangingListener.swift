import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback port whose TCP handshakes never complete: a backend behind a black hole, without
/// leaving the machine. It is a listening socket with a backlog of none that nothing accepts
/// from, whose queue a few connections of its own have filled: the kernel drops every further
/// SYN, so a connect to it hangs until the connecting side gives up.
public final class HangingListener: Sendable {
    public let port: Int
    private let descriptors: [Int32]

    public init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw Self.failure("socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(listener, address, length) == 0 && listen(listener, 0) == 0
                    && getsockname(listener, address, &length) == 0
            }
        }
        guard bound else {
            _ = Glibc.close(listener)
            throw Self.failure("bind/listen")
        }
        var descriptors = [listener]
        // Fills the accept queue (one connection for a backlog of none; three to be sure).
        for _ in 0..<3 {
            let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard filler >= 0 else { continue }
            _ = fcntl(filler, F_SETFL, fcntl(filler, F_GETFL) | O_NONBLOCK)
            _ = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, length) }
            }
            descriptors.append(filler)
        }
        self.port = Int(UInt16(bigEndian: address.sin_port))
        self.descriptors = descriptors
    }

    /// Closes the listener and its fillers.
    public func close() {
        for descriptor in self.descriptors { _ = Glibc.close(descriptor) }
    }

    private static func failure(_ step: String) -> any Error {
        NSError(domain: "HangingListener", code: Int(errno), userInfo: [NSLocalizedDescriptionKey: "\(step) failed"])
    }
}
