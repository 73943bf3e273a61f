import GRPCCore
import GRPCProtobuf
import SwiftProtobuf

/// `hearth.echo.v1.Echo/Echo`, registered and called by hand: no protoc-gen-grpc-swift stubs.
enum EchoMethod {
    static let descriptor = MethodDescriptor(fullyQualifiedService: "hearth.echo.v1.Echo", method: "Echo")

    static let requestSerializer = ProtobufSerializer<Hearth_Echo_V1_EchoRequest>()
    static let requestDeserializer = ProtobufDeserializer<Hearth_Echo_V1_EchoRequest>()
    static let responseSerializer = ProtobufSerializer<Hearth_Echo_V1_EchoResponse>()
    static let responseDeserializer = ProtobufDeserializer<Hearth_Echo_V1_EchoResponse>()
}

/// Answers each request with its payload and text.
struct EchoService: RegistrableRPCService {
    func registerMethods<Transport: ServerTransport>(with router: inout RPCRouter<Transport>) {
        router.registerHandler(
            forMethod: EchoMethod.descriptor,
            deserializer: EchoMethod.requestDeserializer,
            serializer: EchoMethod.responseSerializer
        ) { stream, _ in
            let request = try await ServerRequest(stream: stream)
            let response = Hearth_Echo_V1_EchoResponse.with {
                $0.payload = request.message.payload
                $0.text = request.message.text
            }
            return StreamingServerResponse(single: ServerResponse(message: response))
        }
    }
}
