import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A bare TCP connection to the page on 127.0.0.1: writes exactly the bytes it is told (half a
/// request line, a byte at a time), reads whatever comes back, and sees when the page closes
/// it. Non-blocking and polled, so that waiting holds none of the task pool's threads.
final class RawSocket {
    private var descriptor: Int32
    private var received: [UInt8] = []
    /// Whether the page has closed the connection (as far as the last look saw).
    private(set) var isClosed = false

    /// Connects to `port` on 127.0.0.1 (the kernel completes the handshake whether or not the
    /// page has accepted the connection yet).
    init(port: Int) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Self.failure("socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            _ = Glibc.close(descriptor)
            throw Self.failure("connect")
        }
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        self.descriptor = descriptor
    }

    deinit {
        self.close()
    }

    /// Writes `text`; false when the page has closed the connection (or reset it) meanwhile.
    @discardableResult
    func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count, self.descriptor >= 0 {
            // MSG_NOSIGNAL: a write to a closed connection fails instead of killing the process.
            let written = bytes[sent...].withUnsafeBytes {
                Glibc.send(self.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written > 0 {
                sent += written
            } else if written < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                continue
            } else {
                self.isClosed = true
                return false
            }
        }
        return sent == bytes.count
    }

    /// Reads what has arrived without waiting, and whether the page has closed the connection.
    func lookClosed() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !self.isClosed, self.descriptor >= 0 {
            let count = buffer.withUnsafeMutableBytes { recv(self.descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                self.received += buffer[0..<count]
            } else if count == 0 {
                self.isClosed = true
            } else if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                break
            } else {
                self.isClosed = true  // reset
            }
        }
        return self.isClosed
    }

    /// Waits (polling, bounded) until the page closes the connection; whether it did.
    func waitUntilClosed(within limit: Duration) async throws -> Bool {
        let clock = ContinuousClock()
        let end = clock.now + limit
        while !self.lookClosed(), clock.now < end {
            try await Task.sleep(for: .milliseconds(5))
        }
        return self.lookClosed()
    }

    /// The status code of the first answer, once its status line has come; nil if it did not
    /// come within `limit` (or the connection closed first).
    func status(within limit: Duration) async throws -> Int? {
        let clock = ContinuousClock()
        let end = clock.now + limit
        while true {
            let closed = self.lookClosed()
            if let status = self.firstStatus { return status }
            if closed || clock.now >= end { return nil }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// `HTTP/1.1 404 Not Found` -> 404, once a whole status line has arrived.
    private var firstStatus: Int? {
        guard let end = self.received.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        let line = String(decoding: self.received[..<end], as: UTF8.self)
        let fields = line.split(separator: " ")
        return fields.count >= 2 && fields[0].hasPrefix("HTTP/") ? Int(fields[1]) : nil
    }

    func close() {
        guard self.descriptor >= 0 else { return }
        _ = Glibc.close(self.descriptor)
        self.descriptor = -1
    }

    private static func failure(_ step: String) -> any Error {
        NSError(domain: "RawSocket", code: Int(errno), userInfo: [NSLocalizedDescriptionKey: "\(step) failed"])
    }
}
