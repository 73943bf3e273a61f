public import Foundation
import HearthCore
public import SwiftProtobuf

extension Google_Protobuf_Timestamp {
    /// `date` to the millisecond, as the stores keep dates: `12:00:00.444Z` on the wire, not the
    /// `12:00:00.444000006Z` that a `Date`'s binary fraction gives through `init(date:)`.
    public init(millisecondsOf date: Date) {
        let (seconds, remainder) = date.millisecondsSince1970.quotientAndRemainder(dividingBy: 1000)
        // Before 1970 the remainder is negative; nanos count forward from a whole second.
        let borrow: Int64 = remainder < 0 ? 1 : 0
        self.init(seconds: seconds - borrow, nanos: Int32((remainder + borrow * 1000) * 1_000_000))
    }
}
