import SwiftProtobuf

/// The envelope every connection carries (`hearth.rpc.v1.Frame`).
public typealias WireFrame = Hearth_Rpc_V1_Frame
/// gRPC's status codes with gRPC's numbers (`hearth.rpc.v1.Code`).
public typealias StatusCode = Hearth_Rpc_V1_Code
/// A response status on the wire (`hearth.rpc.v1.Status`).
public typealias WireStatus = Hearth_Rpc_V1_Status

extension StatusCode {
    /// The code's name as gRPC spells it, e.g. `DEADLINE_EXCEEDED`.
    public var name: String {
        switch self {
        case .ok: "OK"
        case .cancelled: "CANCELLED"
        case .unknown: "UNKNOWN"
        case .invalidArgument: "INVALID_ARGUMENT"
        case .deadlineExceeded: "DEADLINE_EXCEEDED"
        case .notFound: "NOT_FOUND"
        case .alreadyExists: "ALREADY_EXISTS"
        case .permissionDenied: "PERMISSION_DENIED"
        case .resourceExhausted: "RESOURCE_EXHAUSTED"
        case .failedPrecondition: "FAILED_PRECONDITION"
        case .aborted: "ABORTED"
        case .outOfRange: "OUT_OF_RANGE"
        case .unimplemented: "UNIMPLEMENTED"
        case .internal: "INTERNAL"
        case .unavailable: "UNAVAILABLE"
        case .dataLoss: "DATA_LOSS"
        case .unauthenticated: "UNAUTHENTICATED"
        case .UNRECOGNIZED(let raw): "CODE_\(raw)"
        }
    }

    /// Every code gRPC defines, in numeric order.
    public static let known: [StatusCode] = (0...16).compactMap { StatusCode(rawValue: $0) }
}
