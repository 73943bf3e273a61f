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

    public func validate() throws {
        guard (self.tlsCert == nil) == (self.tlsKey == nil) else {
            throw ValidationError("give --tls-cert and --tls-key together")
        }
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
