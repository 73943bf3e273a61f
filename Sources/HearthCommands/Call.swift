import ArgumentParser
import Foundation
import HearthCommandLine
import HearthRPC
import SwiftProtobuf

/// `hearth call`: one call with a JSON request, the response printed as JSON (like grpcurl).
struct Call: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Call a method with a protobuf-JSON request; print the response as JSON.",
        discussion: """
            On an error it prints CODE_NAME: message and each field violation, and exits with the
            status code's number.
              hearth call hearth.echo.v1.Echo/Echo '{"text": "hi", "payload": "AAEC"}'
                echo '{"service": ""}' | hearth call --target 127.0.0.1:7105 hearth.health.v1.Health/Check -
              hearth call --timeout 100ms hearth.echo.v1.Echo/Echo '{"sleepMs": 500}'
              hearth call --internal-secret "$(cat data/secrets/gateway-echo.key)" hearth.echo.v1.Echo/Echo '{}'
            The token comes from --token or $HEARTH_TOKEN (see `hearth token`).
            """
    )

    @Option(
        help: "HOST:PORT to call. Default: the local gateway (with --internal-secret: the process serving the method)."
    )
    var target: Target?

    @OptionGroup var caller: CallerOptions
    @OptionGroup var tls: ClientTLSOptions

    @Option(name: .long, help: "Request metadata, repeatable. Example: --metadata x-request-id=abc")
    var metadata: [String] = []

    @Option(help: "How long to wait. Examples: 250ms, 5s, 1m")
    var timeout = DurationArgument(.seconds(5))

    @Argument(help: "The method, package.Service/Method. Example: hearth.echo.v1.Echo/Echo")
    var method: String

    @Argument(help: "The request as protobuf JSON, or - to read it from standard input. Default: {}")
    var request = "{}"

    func validate() throws {
        _ = try parseMetadata(self.metadata)
    }

    func run() async throws {
        // Like the server would answer, and with its exit code: UNIMPLEMENTED, INVALID_ARGUMENT.
        guard let descriptor = MethodCatalog.method(named: self.method) else {
            throw fail(RPCError(.unimplemented, MethodCatalog.unknown(self.method)))
        }
        let target = self.target ?? self.caller.defaultTarget(for: self.method)
        let json =
            self.request == "-"
            ? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self) : self.request
        let payload: Data
        do {
            payload = try descriptor.requestType.init(jsonString: json).serializedData()
        } catch {
            throw fail(
                RPCError(
                    .invalidArgument,
                    "the request is not a valid \(descriptor.requestType.protoMessageName) in JSON: "
                        + JSONProblem.explain(error)
                )
            )
        }

        let metadata = try parseMetadata(self.metadata).merging(self.caller.metadata) { _, trusted in trusted }
        var configuration = RPCClient.Configuration(
            host: target.host,
            port: target.port,
            // A photo upload may be sent; a server that takes less answers with GOAWAY.
            maxFrameSize: ProcessName.largestFrameSize,
            connectionSetup: try self.tls.connectionSetup(host: target.host)
        )
        configuration.authenticateFirst(ifCarrying: metadata)
        let client = RPCClient(configuration: configuration)
        let result: Result<Data, any Error>
        do {
            let options = CallOptions(timeout: self.timeout.duration, metadata: metadata)
            result = .success(try await client.callRaw(self.method, payload: payload, options: options))
        } catch {
            result = .failure(error)
        }
        await client.close()

        switch result {
        case .success(let data):
            let response = try descriptor.responseType.init(serializedBytes: data)
            print(prettyJSON(try response.jsonString()))
        case .failure(let error):
            throw fail(RPCError(answering: error))
        }
    }
}

/// Prints `error` as CODE_NAME: message (and its field violations); the exit code to end with:
/// the status code's number.
func fail(_ error: RPCError) -> ExitCode {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    return ExitCode(Int32(error.code.rawValue == 0 ? 2 : error.code.rawValue))
}

/// Indents compact JSON for people; returns it unchanged if it does not parse.
func prettyJSON(_ json: String) -> String {
    guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)),
        let data = try? JSONSerialization.data(
            withJSONObject: object,
            options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        )
    else { return json }
    return String(decoding: data, as: UTF8.self)
}

/// What a protobuf JSON decoding error means, said for someone writing the request by hand
/// (SwiftProtobuf names the kind of error, not the field).
enum JSONProblem {
    static func explain(_ error: any Error) -> String {
        guard let error = error as? JSONDecodingError else { return "\(error)" }
        return switch error {
        case .unknownField(let name): "no field '\(name)' (fields are spelled as in the .proto, or in lowerCamelCase)"
        case .unrecognizedEnumValue:
            "an enum field holds a name it does not have (names are spelled as in the .proto, e.g. TASK_STATE_ACTIVE)"
        case .malformedTimestamp: "a timestamp is not RFC 3339 (e.g. \"2026-06-01T09:00:00Z\")"
        case .malformedDuration: "a duration is not seconds with an s (e.g. \"1.5s\")"
        case .malformedString: "a string field holds something other than a string"
        case .malformedNumber, .numberRange, .leadingZero: "a number field holds something other than a number in range"
        case .malformedBool: "a bool field holds something other than true or false"
        case .truncated: "the JSON ends before it is complete"
        case .trailingGarbage: "there is more after the JSON object"
        default: "\(error)"
        }
    }
}

extension RPCClient.Configuration {
    /// For calls that carry a token (`authorization`), which go to Hearth's gateway: it takes a
    /// large frame (a photo) on a connection only once a call has authenticated it.
    mutating func authenticateFirst(ifCarrying metadata: [String: String]) {
        guard metadata["authorization"] != nil else { return }
        self.maxFrameSizeBeforeAuthentication = RPCClient.gatewayFrameSizeBeforeAuthentication
    }
}
