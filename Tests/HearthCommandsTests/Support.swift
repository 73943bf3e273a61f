import EchoService
import HearthTestSupport

/// Runs an echo server on a free loopback port for the duration of `body`.
func withEchoServer<T>(_ body: (Int) async throws -> T) async throws -> T {
    try await withServer(services: [EchoService()]) { _, port in try await body(port) }
}
