import Foundation
import FuzzDriver
import Logging
import NIOCore
import NIOEmbedded
import SwiftProtobuf

@testable import HearthRPC

/// One connection's server pipeline, exactly as `RPCServer` builds it (the length-prefix
/// decoder, then the connection handler with a router), on an embedded channel: the input
/// bytes arrive as if from a peer, every call it starts runs to completion on the channel's
/// loop, then the connection closes. Crashes, sanitizer reports and leaks are findings.
enum FrameFuzzer {
    static let logger: Logger = {
        var logger = Logger(label: "fuzz")
        logger.logLevel = .critical
        return logger
    }()

    static let configuration: ServerConfiguration = {
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0, callers: Self.callers)
        configuration.maxFrameSize = 64 * 1024
        configuration.maxConcurrentCallsPerConnection = 8
        return configuration
    }()

    /// A caller allowed every method, and one allowed only Echo: the fuzzer reaches both refusals
    /// (UNAUTHENTICATED and PERMISSION_DENIED).
    static let callers = [
        Caller(name: "fuzz", credential: "fuzz-secret", methods: .all),
        Caller(name: "echo-only", credential: "fuzz-echo-only", methods: .only(["hearth.echo.v1.Echo/Echo"])),
    ]

    /// Serves every method without a handler, as the gateway does.
    static let forwarder = FuzzForwarder()

    static let router = MethodRouter(
        handlers: [
            "hearth.echo.v1.Echo/Echo": { payload, _ in payload },
            "hearth.fuzz.v1.Fuzz/Fail": { _, _ in throw RPCError(.failedPrecondition, "failing as asked") },
            "hearth.fuzz.v1.Fuzz/User": { _, context in Data(try context.verifiedUser().utf8) },
            "hearth.health.v1.Health/Check": { _, _ in Data() },
        ],
        forwarder: forwarder,
        publicMethods: ["hearth.health.v1.Health/Check"],
        callers: Self.callers,
        logger: Self.logger
    )

    static func run(_ bytes: UnsafeRawBufferPointer) {
        Self.checkFrameCodec(bytes)
        let channel = EmbeddedChannel()
        let calls = CallCounter()
        do {
            try channel.pipeline.syncOperations.addServerConnectionHandlers(
                router: Self.router,
                configuration: Self.configuration,
                callsInFlight: calls,
                partialFrames: PartialFrameBudget(limit: Self.configuration.maxPartialFrameBytes),
                logger: Self.logger
            )
            channel.pipeline.fireChannelActive()
            // Feed the input in two writes (split in its first byte's proportion), so frames
            // that straddle reads are exercised too.
            let split = bytes.isEmpty ? 0 : Int(bytes[0]) * bytes.count / 256
            for part in [bytes[..<split], bytes[split...]] where !part.isEmpty {
                var buffer = channel.allocator.buffer(capacity: part.count)
                buffer.writeBytes(UnsafeRawBufferPointer(rebasing: part))
                try channel.writeInbound(buffer)
                channel.embeddedEventLoop.run()
            }
        } catch {
            // A protocol error closes the connection; that is an answer, not a finding.
        }
        for _ in 0..<4 { channel.embeddedEventLoop.run() }
        _ = try? channel.finish(acceptAlreadyClosed: true)
        channel.embeddedEventLoop.run()
        precondition(calls.current >= 0, "calls in flight went negative")
        precondition(Self.forwarder.unfinished == 0, "a forwarded call was neither answered nor cancelled")
    }
}

/// Answers forwarded calls as a backend might, the way the payload's first byte chooses: at
/// once, with an error, on a later turn of the loop, or never (until the server cancels it,
/// which it must do by the time the connection has closed). Methods outside `hearth.fwd.` are
/// unknown here, as the gateway answers a service it has no backend for.
final class FuzzForwarder: CallForwarder, @unchecked Sendable {
    /// Forwarded calls started and not yet answered or cancelled. The fuzzer runs one input at
    /// a time on one thread (the embedded loop's), so a plain counter does.
    private(set) var unfinished = 0

    func forward(_ payload: Data, context: RPCContext, on loop: any EventLoop) -> StartedCall {
        guard context.method.hasPrefix("hearth.fwd.") else {
            return .answered(.failure(RPCError(.unimplemented, "no backend for \(context.method)")), on: loop)
        }
        let promise = loop.makePromise(of: Data.self)
        self.unfinished += 1
        promise.futureResult.whenComplete { _ in self.unfinished -= 1 }
        switch payload.first.map({ $0 % 4 }) ?? 0 {
        case 0: promise.succeed(payload)
        case 1: promise.fail(RPCError(.unavailable, "backend down"))
        case 2: loop.execute { promise.succeed(payload) }
        default: break  // answered by cancel only
        }
        return StartedCall(
            response: promise.futureResult,
            cancel: { promise.fail(RPCError(.cancelled, "cancelled")) }
        )
    }
}

extension FrameFuzzer {
    /// The last input read as a frame (libFuzzer runs inputs one at a time, on one thread).
    nonisolated(unsafe) static var previousFrame: WireFrame?

    /// The input as one frame body: the hand-written decoder must read it exactly as
    /// swift-protobuf does (or refuse it likewise), and a frame it reads must be written back
    /// to the bytes swift-protobuf writes for it.
    static func checkFrameCodec(_ bytes: UnsafeRawBufferPointer) {
        var body = ByteBufferAllocator().buffer(capacity: bytes.count)
        body.writeBytes(bytes)
        let hand = try? WireFrame(decoding: body)
        // Read again reusing the strings of frames read before, as a connection does: its own
        // (every one matches), the input one byte shorter's (most match or differ in length)
        // and the previous input's (some the same length with other bytes). The same answer
        // each time.
        let shorter: WireFrame? =
            if bytes.count > 1 {
                try? WireFrame(decoding: body.getSlice(at: body.readerIndex, length: bytes.count - 1)!)
            } else {
                nil
            }
        for previous in [hand, shorter, Self.previousFrame] where previous != nil {
            precondition(
                (try? WireFrame(decoding: body, reusingStringsOf: previous)) == hand,
                "the frame decoder reusing strings disagrees"
            )
        }
        if let hand { Self.previousFrame = hand }
        let reference = try? WireFrame(serializedBytes: Array(bytes))
        if let reference, reference.metadata.count > Metadata.maxEntries {
            // Too many for any call: the decoder keeps the first one past the limit and no
            // more, or refuses the frame.
            var kept = reference
            kept.metadata = Array(reference.metadata.prefix(Metadata.maxEntries + 1))
            precondition(hand == nil || hand == kept, "the frame decoder kept too many metadata entries")
            return
        }
        precondition(hand == reference, "the frame decoder disagrees with swift-protobuf")
        guard let frame = hand else { return }
        var options = BinaryEncodingOptions()
        options.useDeterministicOrdering = true
        var written = try! ByteBufferAllocator().buffer(framing: frame)
        written.moveReaderIndex(forwardBy: 4)
        precondition(
            Array(written.readableBytesView) == (try! frame.serializedBytes(options: options) as [UInt8]),
            "the frame encoder disagrees with swift-protobuf"
        )
    }
}

/// SwiftPM names an executable's entry point `<module>_main`; it hands over to libFuzzer.
@_cdecl("frame_fuzzer_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { start, size in
        FrameFuzzer.run(UnsafeRawBufferPointer(start: start, count: size))
        return 0
    }
}
