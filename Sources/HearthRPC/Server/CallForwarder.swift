public import Foundation
public import NIOCore

/// Serves the calls a server has no method of its own for by sending them on to another
/// server: the gateway. It runs on the calling connection's event loop and starts no task per
/// call, so a forwarded call costs little more than the two frames it passes on.
///
/// Server interceptors do not wrap forwarded calls: a forwarder keeps its own log and metrics.
public protocol CallForwarder: Sendable {
    /// Starts sending one call on. Runs on `loop`, the calling connection's, and must not
    /// block it. The server cancels the returned call when its caller cancels it, its deadline
    /// passes or its connection closes.
    func forward(_ payload: Data, context: RPCContext, on loop: any EventLoop) -> StartedCall
}
