import AsyncHTTPClient
public import Foundation
import HearthCore
public import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// A notification for one user's devices, as the webhook receives it in JSON (its schema:
/// schemas/push-webhook.schema.json; a field left nil is left out).
public struct PushMessage: Codable, Sendable, Equatable {
    /// How urgently the phone presents it: Apple's interruption levels, which the receiver maps
    /// to its platform (an Android channel's importance).
    public enum InterruptionLevel: String, Codable, Sendable {
        case passive
        case active
        /// Breaks through a scheduled summary and Focus.
        case timeSensitive = "time-sensitive"
        /// Sound and vibration even when muted (the app needs Apple's critical-alerts entitlement).
        case critical
    }

    /// A button on the notification, which acts without opening the app.
    public struct Action: Codable, Sendable, Equatable {
        /// Stable: the app registers its category's actions by these (`IM_SAFE`).
        public var id: String
        /// In the user's language.
        public var title: String
        /// The call the app makes when it is tapped (`hearth.safety.v1.Safety/RecordHeartbeat`).
        public var method: String

        public init(id: String, title: String, method: String) {
            self.id = id
            self.title = title
            self.method = method
        }
    }

    /// Unique per message; sent as `Idempotency-Key` so that a receiver can drop a repeat.
    public var id: String
    public var userID: String
    /// What happened, e.g. `checkin.created`.
    public var kind: String
    public var title: String
    public var body: String
    public var data: [String: String]
    public var createdAt: Date
    /// After this it is no longer worth showing: an outbox that could not send it by then
    /// drops it. Nil: it never goes stale.
    public var expiresAt: Date?
    /// Nil: the receiver's default (active).
    public var interruptionLevel: InterruptionLevel?
    /// The notification category the app registers with `actions` (`SAFETY_WARNING`).
    public var category: String?
    public var actions: [Action]?
    /// Where tapping the notification opens the app.
    public var deepLink: String?

    public init(
        id: String = UUID().uuidString.lowercased(),
        userID: String,
        kind: String,
        title: String,
        body: String,
        data: [String: String] = [:],
        createdAt: Date,
        expiresAt: Date? = nil,
        interruptionLevel: InterruptionLevel? = nil,
        category: String? = nil,
        actions: [Action]? = nil,
        deepLink: String? = nil
    ) {
        self.id = id
        self.userID = userID
        self.kind = kind
        self.title = title
        self.body = body
        self.data = data
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.interruptionLevel = interruptionLevel
        self.category = category
        self.actions = actions
        self.deepLink = deepLink
    }
}

/// Delivers one push. Throwing ``PushRejected`` means "never retry"; any other error means
/// "try again later".
public protocol PushSender: Sendable {
    func send(_ message: PushMessage) async throws
}

/// The receiver refused the message for good (a 4xx other than 408 and 429).
public struct PushRejected: Error, CustomStringConvertible {
    public var status: Int
    public var description: String { "push rejected with HTTP \(self.status)" }
}

/// POSTs each message as JSON to a webhook (AsyncHTTPClient). 2xx is delivered; 4xx other than
/// 408 and 429 is rejected for good; anything else (408, 429, 5xx, and a 1xx or 3xx, which says
/// nothing about the message) is retried. A redirect is never followed: a message goes to the
/// address the operator named and nowhere else (not from https to http, not to another host).
public struct WebhookPushSender: PushSender {
    public let url: String
    public let timeout: TimeAmount

    public init(url: String, timeout: TimeAmount = .seconds(10)) {
        self.url = url
        self.timeout = timeout
    }

    public func send(_ message: PushMessage) async throws {
        var request = HTTPClientRequest(url: self.url)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        request.headers.add(name: "idempotency-key", value: message.id)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        request.body = .bytes(ByteBuffer(data: try encoder.encode(message)))
        let response = try await Self.client.execute(request, timeout: self.timeout)
        let status = Int(response.status.code)
        await Self.drain(response.body, within: self.timeout)
        switch status {
        case 200..<300:
            return
        case 400..<500 where status != 408 && status != 429:
            throw PushRejected(status: status)
        default:
            throw WebhookRetryLater(status: status)
        }
    }
}

extension WebhookPushSender {
    /// The process's client for webhooks: `HTTPClient.shared` follows up to 20 redirects. Lives
    /// as long as the process.
    static let client = HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup,
        configuration: HTTPClient.Configuration(redirectConfiguration: .disallow)
    )

    /// Reads an answer's body so that its connection can be used again; the status alone
    /// decides. At most 64 KiB, for at most `limit` (AsyncHTTPClient's deadline ends with the
    /// head): past either, the body is dropped, and the connection with it.
    fileprivate static func drain(_ body: HTTPClientResponse.Body, within limit: TimeAmount) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                var left = 64 * 1024
                do {
                    for try await chunk in body {
                        left -= chunk.readableBytes
                        if left <= 0 { break }
                    }
                } catch {}
            }
            group.addTask { try? await Task.sleep(for: .nanoseconds(limit.nanoseconds)) }
            _ = await group.next()
            group.cancelAll()
        }
    }
}

/// A webhook answer worth retrying.
struct WebhookRetryLater: Error, CustomStringConvertible {
    var status: Int
    var description: String { "webhook answered HTTP \(self.status); will retry" }
}

/// With no webhook configured: records each message in the log, so nothing is silently dropped.
public struct LogPushSender: PushSender {
    public let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    public func send(_ message: PushMessage) async throws {
        self.logger.notice(
            "push",
            metadata: [
                "id": "\(message.id)", "user": "\(message.userID)", "kind": "\(message.kind)",
                // A push may name a contact by address: logs show it masked.
                "title": "\(message.title.maskingEmailAddresses)", "body": "\(message.body.maskingEmailAddresses)",
            ]
        )
    }
}
