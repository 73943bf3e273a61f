public import Foundation

/// Where a page of a list ends: the sort time and id of its last item. A list ordered by
/// (time, id) goes on after it with a keyset condition, so items written meanwhile never shift
/// a page. On the wire it is an opaque `page_token`.
public struct PageCursor: Hashable, Sendable {
    /// To the millisecond, as stores keep dates.
    public var time: Date
    public var id: String

    public init(time: Date, id: String) {
        self.time = time
        self.id = id
    }

    /// The `page_token` that names this position.
    public var token: String {
        Data("\(self.time.millisecondsSince1970):\(self.id)".utf8).base64EncodedString()
    }

    /// The position a `page_token` names; nil unless it is one ``token`` made.
    public init?(token: String) {
        guard let data = Data(base64Encoded: token), let text = String(data: data, encoding: .utf8),
            let colon = text.firstIndex(of: ":"), let ms = Int64(text[..<colon])
        else { return nil }
        let id = text[text.index(after: colon)...]
        guard !id.isEmpty else { return nil }
        self.time = Date(timeIntervalSince1970: Double(ms) / 1000)
        self.id = String(id)
    }
}
