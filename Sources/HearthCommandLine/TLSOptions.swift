import ArgumentParser
import HearthTLS
import NIOCore

/// `--tls-cert` and `--tls-key`: TLS on the gateway's client-facing listener.
public struct ServerTLSOptions: ParsableArguments, Sendable {
    public init() {}

    @Option(help: "PEM certificate chain for TLS on the gateway's listener (with --tls-key). Default: plaintext.")
    public var tlsCert: String?

    @Option(help: "PEM private key for --tls-cert.")
    public var tlsKey: String?

    @Flag(
        help: """
            Serve the gateway without TLS on an address beyond this machine, because a TLS proxy or load \
            balancer in front of it ends TLS. Without it, such a gateway refuses to start (loopback needs nothing).
            """
    )
    public var plaintext = false

    public func validate() throws {
        guard (self.tlsCert == nil) == (self.tlsKey == nil) else {
            throw ValidationError("give --tls-cert and --tls-key together")
        }
        guard self.tlsCert == nil || !self.plaintext else {
            throw ValidationError("give --tls-cert and --tls-key, or --plaintext, not both")
        }
    }

    /// Whether anything was said about the gateway's listener: TLS, or plaintext on purpose.
    public var isGiven: Bool { self.tlsCert != nil || self.plaintext }

    /// Refuses a gateway that would take tokens in the clear from beyond this machine: one
    /// listening on `host`, not a loopback address, without TLS and without `--plaintext`.
    /// - Throws: `ValidationError` saying what to give.
    public func checkExposure(listeningOn host: String) throws {
        guard self.tlsCert == nil, !self.plaintext, !isLoopback(host) else { return }
        throw ValidationError(
            """
            the gateway would listen on \(host), beyond this machine, without TLS: give --tls-cert and --tls-key, \
            or --plaintext if a TLS proxy in front of it ends TLS
            """
        )
    }

    /// The channel setup that adds TLS, or nil for plaintext.
    public func connectionSetup() throws -> (@Sendable (any Channel) throws -> Void)? {
        guard let tlsCert, let tlsKey else { return nil }
        do {
            return try TLS.serverSetup(certificateFile: tlsCert, keyFile: tlsKey)
        } catch {
            throw CommandFailure("cannot use \(tlsCert) and \(tlsKey) for TLS: \(error)")
        }
    }
}

/// `--tls` and `--tls-ca`: how a client command reaches a TLS listener.
public struct ClientTLSOptions: ParsableArguments, Sendable {
    public init() {}

    @Flag(help: "Connect with TLS (the gateway's listener when it has a certificate).")
    public var tls = false

    @Option(help: "PEM file of the certificates to trust (with --tls). Default: the system's roots.")
    public var tlsCA: String?

    /// The channel setup that adds TLS for `host`, or nil for plaintext.
    public func connectionSetup(host: String) throws -> (@Sendable (any Channel) throws -> Void)? {
        guard self.tls || self.tlsCA != nil else { return nil }
        return try TLS.clientSetup(
            trustRootsFile: self.tlsCA,
            serverHostname: host.first?.isNumber == true ? nil : host
        )
    }
}

/// Whether `host` names this machine only: `localhost`, an address in 127.0.0.0/8, `::1`, or
/// an IPv4-mapped loopback address (`::ffff:127.0.0.1`). Any other name, and the wildcard
/// addresses (`0.0.0.0`, `::`), reach beyond it.
public func isLoopback(_ host: String) -> Bool {
    if host.lowercased() == "localhost" { return true }
    guard let address = try? SocketAddress(ipAddress: host, port: 0), let text = address.ipAddress else {
        return false
    }
    switch address {
    case .v4: return text.hasPrefix("127.")
    case .v6: return text == "::1" || text.hasPrefix("::ffff:127.")
    case .unixDomainSocket: return false
    }
}
