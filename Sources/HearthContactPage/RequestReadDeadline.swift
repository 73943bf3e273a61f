import NIOCore
import NIOHTTPTypes

/// Closes a connection whose request has not arrived in full `limit` after its head did.
///
/// Hummingbird's idle timeout (`HTTP1Channel.Configuration.idleTimeout`) closes a connection
/// that completes no request head in time, however slowly its bytes come; but once a head is
/// in, every part of the body read starts the timeout anew, so a body sent a byte at a time
/// (or a large one the server reads past to reach the next request) would hold the connection
/// for as long as its client likes. This puts a deadline on the whole request instead.
final class RequestReadDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private let limit: TimeAmount
    private var deadline: Scheduled<Void>?

    init(limit: TimeAmount) {
        self.limit = limit
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch Self.unwrapInboundIn(data) {
        case .head:
            self.deadline?.cancel()
            self.deadline = context.eventLoop.assumeIsolated().scheduleTask(in: self.limit) {
                context.close(promise: nil)
            }
        case .end:
            self.deadline?.cancel()
            self.deadline = nil
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.deadline?.cancel()
        self.deadline = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.deadline?.cancel()
        self.deadline = nil
    }
}

@available(*, unavailable)
extension RequestReadDeadline: Sendable {}
