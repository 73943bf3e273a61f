import EchoService
import Foundation
import HearthRPC
import Logging
import NIOCore

/// Runs an echo server on a free loopback port for the duration of `body`.
func withEchoServer<T>(_ body: (Int) async throws -> T) async throws -> T {
    var logger = Logger(label: "test")
    logger.logLevel = .critical
    let server = RPCServer(services: [EchoService()], logger: logger)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await server.run() }
        let port = try await server.localAddress.port!
        do {
            let result = try await body(port)
            server.beginShutdown()
            try await group.waitForAll()
            return result
        } catch {
            group.cancelAll()
            throw error
        }
    }
}
