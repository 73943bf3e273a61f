public import Foundation
import HearthRPC
import SwiftProtobuf

/// Activity other services forward to safety (`ForwardActivity`): with the user's opt-in, a
/// check-in elsewhere counts as a check-in there.
public enum SafetyActivity {
    public static let method = Hearth_Safety_V1_Safety.Method.forwardActivity.name

    /// The longest `event_id` safety takes; it refuses a longer one for good.
    public static let maxEventIDCharacters = 128

    /// The serialized request; `eventID` is unique within `source` for one user (at most
    /// ``maxEventIDCharacters``), so a retry counts once.
    public static func request(source: String, eventID: String, occurredAt: Date) -> Data {
        var request = Hearth_Safety_V1_ForwardActivityRequest()
        request.source = source
        request.eventID = eventID
        request.occurredAt = Google_Protobuf_Timestamp(date: occurredAt)
        // A message of strings and a timestamp always serializes.
        return (try? request.serializedData()) ?? Data()
    }
}
