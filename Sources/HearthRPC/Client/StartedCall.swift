public import Foundation
public import NIOCore

/// A call in flight, started without a task: its answer, and how to stop it. What code on an
/// event loop holds instead of awaiting (the gateway forwards every call with these).
public struct StartedCall: Sendable {
    /// The response payload; a failure is an ``RPCError`` (the server's status, UNAVAILABLE,
    /// DEADLINE_EXCEEDED, CANCELLED) or whatever a task-run step threw.
    public let response: EventLoopFuture<Data>
    /// Stops the call: on a connection, CANCEL goes to the server if the call is still in flight
    /// and `response` fails with CANCELLED; a task-run call has its task cancelled (it fails as
    /// its body does). Safe to call from any thread, and after the call ended.
    public let cancel: @Sendable () -> Void

    public init(response: EventLoopFuture<Data>, cancel: @escaping @Sendable () -> Void) {
        self.response = response
        self.cancel = cancel
    }

    /// A call that is already answered (refused before it was sent anywhere).
    public static func answered(_ result: Result<Data, any Error>, on loop: any EventLoop) -> StartedCall {
        StartedCall(response: loop.makeCompletedFuture(result), cancel: {})
    }

    /// A call whose first steps must await (connecting, verifying a new token): `body` runs
    /// in a task that cancelling the call cancels.
    public static func task(
        on loop: any EventLoop,
        _ body: @escaping @Sendable () async throws -> Data
    ) -> StartedCall {
        let promise = loop.makePromise(of: Data.self)
        let task = Task {
            do {
                try Task.checkCancellation()
                promise.succeed(try await body())
            } catch {
                promise.fail(error)
            }
        }
        return StartedCall(response: promise.futureResult, cancel: { task.cancel() })
    }

    /// The response, awaited; cancelling the awaiting task cancels the call.
    public var value: Data {
        get async throws {
            try await withTaskCancellationHandler {
                try await self.response.get()
            } onCancel: {
                self.cancel()
            }
        }
    }
}
