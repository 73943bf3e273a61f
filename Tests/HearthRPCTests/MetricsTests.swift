import EchoService
import Foundation
import HearthContracts
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import HearthRPC

@Suite("Prometheus metrics", .timeLimit(.minutes(1)))
struct MetricsTests {
    @Test("a call stopped by its deadline is counted DEADLINE_EXCEEDED, a cancelled one CANCELLED")
    func deadlineCountedAsTheCallerSawIt() {
        let metrics = MethodMetrics()
        func context(deadline: NIODeadline?) -> RPCContext {
            RPCContext(
                method: "m",
                metadata: [:],
                deadline: deadline,
                peer: "test",
                callID: 1,
                connectionTag: "t",
                logger: testLogger
            )
        }
        let start = NIODeadline.now()
        context(deadline: .now() - .seconds(1)).recordServed(code: .cancelled, since: start, user: nil, in: metrics)
        context(deadline: .now() + .seconds(60)).recordServed(code: .cancelled, since: start, user: nil, in: metrics)
        context(deadline: nil).recordServed(code: .ok, since: start, user: "u", in: metrics)
        #expect(metrics.snapshot()["m"]?.countsByCode == [.deadlineExceeded: 1, .cancelled: 1, .ok: 1])
    }

    @Test("a scrape over HTTP parses as Prometheus text and counts the calls made")
    func scrape() async throws {
        let metrics = MethodMetrics()
        try await withTestServer(interceptors: [ServerObservabilityInterceptor(metrics: metrics)]) { server, port in
            let endpoint = MetricsServer(host: "127.0.0.1", port: 0, logger: testLogger) {
                prometheusText([
                    ProcessMetrics(
                        process: "echo",
                        methods: metrics.snapshot(),
                        callsInFlight: server.callsInFlight,
                        openConnections: server.openConnections
                    )
                ])
            }
            let run = Task { try await endpoint.run() }
            let metricsPort = try await endpoint.localAddress.port!

            let client = makeClient(port: port)
            let echo = Hearth_Echo_V1_Echo.Client(client)
            _ = try await echo.echo(echoRequest(text: "a"))
            _ = try await echo.echo(echoRequest(text: "b"))
            _ = try? await echo.echo(echoRequest(failWithCode: 5))

            let response = try await httpGet(port: metricsPort, path: "/metrics")
            #expect(response.hasPrefix("HTTP/1.1 200 OK"))
            #expect(response.lowercased().contains("content-type: text/plain; version=0.0.4"))
            let body = String(response[response.range(of: "\r\n\r\n")!.upperBound...])
            let sample =
                /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? -?[0-9.]+(e[+-]?[0-9]+)?$/
            for line in body.split(separator: "\n") where !line.hasPrefix("#") {
                #expect(line.wholeMatch(of: sample) != nil, "not a Prometheus sample: \(line)")
            }
            #expect(body.contains(#"hearth_calls_total{process="echo",method="hearth.echo.v1.Echo/Echo",code="OK"} 2"#))
            #expect(
                body.contains(
                    #"hearth_calls_total{process="echo",method="hearth.echo.v1.Echo/Echo",code="NOT_FOUND"} 1"#
                )
            )
            #expect(
                body.contains(
                    #"hearth_call_duration_seconds_count{process="echo",method="hearth.echo.v1.Echo/Echo"} 3"#
                )
            )
            #expect(body.contains(#"hearth_connections_open{process="echo"} 1"#))
            #expect(body.contains(#"hearth_calls_in_flight{process="echo"} 0"#))

            let missing = try await httpGet(port: metricsPort, path: "/nope")
            #expect(missing.hasPrefix("HTTP/1.1 404"))
            await client.close()
            run.cancel()
            _ = try? await run.value
        }
    }

    @Test("label values are escaped")
    func escaping() {
        let text = prometheusText([
            ProcessMetrics(process: "a\"b\\c\nd", methods: [:], callsInFlight: 2, openConnections: 0)
        ])
        #expect(text.contains(#"hearth_calls_in_flight{process="a\"b\\c\nd"} 2"#))
        // CR LF is one Character: it went out raw and ended the line.
        let crlf = prometheusText([
            ProcessMetrics(process: "a\r\nb", methods: [:], callsInFlight: 1, openConnections: 0)
        ])
        #expect(crlf.contains("hearth_calls_in_flight{process=\"a\r\\nb\"} 1"))
        #expect(crlf.split(separator: "\n").allSatisfy { $0.hasPrefix("#") || $0.hasPrefix("hearth_") })
    }

    @Test("method names past 200 (or longer than 200 bytes) are counted together as (other)")
    func boundedMethods() {
        let metrics = MethodMetrics()
        for index in 0..<(MethodMetrics.maxMethods + 50) {
            metrics.record(method: "made.up/\(index)", code: .unimplemented, micros: 1)
        }
        metrics.record(method: "made.up/0", code: .ok, micros: 1)  // one kept apart stays apart
        metrics.record(method: String(repeating: "x", count: MethodMetrics.maxMethodBytes + 1), code: .ok, micros: 1)
        let snapshot = metrics.snapshot()
        #expect(snapshot.count == MethodMetrics.maxMethods + 1)
        #expect(snapshot["made.up/0"]?.countsByCode == [.unimplemented: 1, .ok: 1])
        #expect(snapshot[MethodMetrics.otherMethods]?.countsByCode == [.unimplemented: 50, .ok: 1])
    }
}

/// A bare HTTP/1.1 GET: the whole response as text, read until the server closes.
func httpGet(port: Int, path: String) async throws -> String {
    let collector = ByteCollector()
    let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(collector)
            }
        }
        .connect(host: "127.0.0.1", port: port).get()
    try await channel.writeAndFlush(ByteBuffer(string: "GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n"))
    try await channel.closeFuture.get()
    return String(decoding: collector.bytes.withLock { $0 }, as: UTF8.self)
}

private final class ByteCollector: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let bytes = Mutex<[UInt8]>([])

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = Self.unwrapInboundIn(data)
        self.bytes.withLock { $0 += buffer.readableBytesView }
    }
}

@Suite("What callers put in log lines")
struct LogTextTests {
    @Test("a request id is the caller's only when it is 1-128 bytes of printable ASCII")
    func requestIDs() {
        #expect(RPCContext.isUsableRequestID(String(repeating: "a", count: 128)))
        #expect(RPCContext.isUsableRequestID("0123456789abcdef"))
        #expect(!RPCContext.isUsableRequestID(String(repeating: "a", count: 129)))
        #expect(!RPCContext.isUsableRequestID(""))
        #expect(!RPCContext.isUsableRequestID("abc\nfake=line"))
        #expect(!RPCContext.isUsableRequestID("with space"))
        #expect(!RPCContext.isUsableRequestID("é"))
    }

    @Test("a method name in a log line has its control characters escaped and is cut at 256 bytes")
    func methods() {
        #expect(LogText.safe("hearth.echo.v1.Echo/Echo") == "hearth.echo.v1.Echo/Echo")
        let forged = LogText.safe("a.B/C\n2026-11-26 info call method=x")
        #expect(!forged.contains("\n") && forged.hasPrefix("a.B/C\\n"))
        let long = LogText.safe(String(repeating: "m", count: 1_000_000))
        #expect(long.utf8.count == LogText.maxBytes && long.hasSuffix("..."))
        #expect(LogText.safe(String(repeating: "m", count: 256)) == String(repeating: "m", count: 256))
        for separator in ["\u{85}", "\u{2028}", "\u{2029}", "\r", "\u{7F}"] {
            #expect(!LogText.safe("a\(separator)b").contains(separator), "\(separator.unicodeScalars.first!.value)")
        }
        #expect(LogText.safe("café/Méthode") == "café/Méthode", "other text is kept")
    }
}
