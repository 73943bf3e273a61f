import Hummingbird
import NIOCore

extension ContactPage {
    /// What the page, on the public edge, gives one client and all of them together. Only a
    /// request that would ask safety (a GET or POST carrying something shaped like a link's
    /// token) is counted and capped; the rest never leave the page.
    public struct Limits: Sendable, Equatable {
        /// Requests asking safety one client may make a minute, sustained. A contact needs two
        /// (the page, then its button); 30 leaves room for several people behind one address
        /// (an office, a carrier's NAT) while a client guessing tokens costs safety half a read
        /// a second.
        public var perMinute: Double
        /// Requests asking safety one client may make at once: opening a link or two, changing
        /// the language, reloading, pressing the button.
        public var burst: Double
        /// Clients whose buckets are kept (about 100 bytes each, so 1 MB for 10,000); past it,
        /// a new client takes the place of the one idle longest.
        public var maxAddresses: Int
        /// Requests asking safety at once, over every client; more are answered 503 at once.
        public var maxInFlight: Int
        /// The longest a connection may go without a complete request head (from its opening,
        /// or from the previous answer), and the longest a request's body may take after its
        /// head: a client sending nothing, or sending a byte at a time, is closed.
        public var readTimeout: Duration
        /// Connections the page holds open at once; further ones wait in the listen queue.
        public var maxConnections: Int
        /// Count a request against the last address of its `X-Forwarded-For` (the one a proxy
        /// in front of the page added) rather than the connection's peer: only behind a proxy
        /// that sets the header, since otherwise any client could name itself anything.
        public var trustForwardedFor: Bool

        public init(
            perMinute: Double = 30,
            burst: Double = 10,
            maxAddresses: Int = 10_000,
            maxInFlight: Int = 64,
            readTimeout: Duration = .seconds(10),
            maxConnections: Int = 1024,
            trustForwardedFor: Bool = false
        ) {
            self.perMinute = perMinute
            self.burst = burst
            self.maxAddresses = maxAddresses
            self.maxInFlight = maxInFlight
            self.readTimeout = readTimeout
            self.maxConnections = maxConnections
            self.trustForwardedFor = trustForwardedFor
        }
    }
}

/// A request's context on the page: what Hummingbird keeps, and the connection's peer.
struct PageContext: RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    /// The connection's peer (a proxy's address when the page is behind one).
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        self.coreContext = CoreRequestContextStorage(source: source)
        self.remoteAddress = source.channel.remoteAddress
    }
}
