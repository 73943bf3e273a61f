import Foundation
import HearthPush
import HearthTestSupport
import NIOCore
import Testing

/// A webhook that answers with a redirect is not followed: the message goes to the address the
/// operator named, and nowhere else.
@Suite("Webhook redirects")
struct WebhookRedirectTests {
    static let message = PushMessage(
        id: "m1",
        userID: "mei",
        kind: "tasks.prompt_due",
        title: "Check-in due",
        body: "How did it go?",
        data: [:],
        createdAt: Date(timeIntervalSince1970: 1_767_225_600)
    )

    @Test(
        "a 3xx is not followed: the message is retried later, and the other address gets nothing",
        arguments: [301, 302, 307, 308]
    )
    func notFollowed(status: Int) async throws {
        let elsewhere = try await WebhookListener()
        let webhook = try await WebhookListener(
            statuses: [status],
            redirectTo: "http://127.0.0.1:\(elsewhere.port)/stolen"
        )
        let sender = WebhookPushSender(url: "http://127.0.0.1:\(webhook.port)/push", timeout: .seconds(10))
        await #expect {
            try await sender.send(Self.message)
        } throws: { error in
            "\(error)".contains("HTTP \(status)") && !(error is PushRejected)
        }
        #expect(webhook.received.count == 1)
        #expect(elsewhere.received.isEmpty, "followed to \(elsewhere.port)")
        // The next attempt, answered 200, delivers it where it was meant to go.
        try await sender.send(Self.message)
        #expect(webhook.received.count == 2 && elsewhere.received.isEmpty)
        await webhook.close()
        await elsewhere.close()
    }
}
