import Dispatch

/// When the call the current task serves stops waiting, for work that cannot hear of it any
/// other way: a read that runs on its connection's event loop holds the loop, so the loop's
/// deadline timer cannot fire until the read returns, but the read itself can look at the time.
/// The RPC server sets it around each handler of a call that has a deadline.
public enum CallDeadline {
    /// The deadline as `DispatchTime.now().uptimeNanoseconds` (the clock NIO's deadlines use);
    /// nil when the call has none, or the task serves no call.
    @TaskLocal public static var uptimeNanoseconds: UInt64?

    /// Runs `body` with `deadline` as the current call's deadline, or as it is when nil.
    @inlinable
    public static func during<T>(_ deadline: UInt64?, _ body: () async throws -> T) async rethrows -> T {
        guard let deadline else { return try await body() }
        return try await Self.$uptimeNanoseconds.withValue(deadline, operation: body)
    }

    /// Whether the current call's deadline has passed.
    public static var hasPassed: Bool {
        guard let deadline = Self.uptimeNanoseconds else { return false }
        return DispatchTime.now().uptimeNanoseconds >= deadline
    }
}

/// The call's deadline passed while its work ran; the RPC runtime answers DEADLINE_EXCEEDED.
public struct CallDeadlinePassed: Error, CustomStringConvertible {
    public init() {}
    public var description: String { "the call's deadline passed while its work ran" }
}
