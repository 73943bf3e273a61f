public import NIOCore
import NIOSSL

/// TLS for Hearth connections (swift-nio-ssl, BoringSSL), as channel setups the runtime runs
/// first on each connection: the runtime itself stays unaware of TLS.
public enum TLS {
    /// Server side: present `certificateFile` (PEM chain) with `keyFile` (PEM key).
    /// - Throws: when either file cannot be read or parsed, or they do not make a context.
    public static func serverSetup(certificateFile: String, keyFile: String) throws
        -> @Sendable (any Channel) throws -> Void
    {
        let chain = try NIOSSLCertificate.fromPEMFile(certificateFile).map { NIOSSLCertificateSource.certificate($0) }
        let key = try NIOSSLPrivateKey(file: keyFile, format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain,
            privateKey: .privateKey(key)
        )
        configuration.minimumTLSVersion = .tlsv12
        let context = try NIOSSLContext(configuration: configuration)
        return { channel in
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
        }
    }

    /// Client side: verify the server against `trustRootsFile` (PEM; nil: the system's roots)
    /// and the name `serverHostname`.
    public static func clientSetup(trustRootsFile: String?, serverHostname: String?) throws
        -> @Sendable (any Channel) throws -> Void
    {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        if let trustRootsFile {
            configuration.trustRoots = .file(trustRootsFile)
        }
        let context = try NIOSSLContext(configuration: configuration)
        return { channel in
            try channel.pipeline.syncOperations.addHandler(
                NIOSSLClientHandler(context: context, serverHostname: serverHostname)
            )
        }
    }
}
