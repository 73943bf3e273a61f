import Foundation
import HearthPush
import HearthScheduler

/// The tasks service's due work: when a prompt's time comes, its "check-in due" push goes
/// into the outbox (once), and the outbox is woken to send it.
struct PromptPushWork: DueWork {
    static let batch = 500
    let store: TaskStore

    func nextDueTime() async throws -> Date? {
        try await self.store.nextNotifyTime()
    }

    func runDue(now: Date) async throws {
        var pushed = 0
        while true {
            let pass = try await self.store.notifyDue(now: now, limit: Self.batch)
            pushed += pass.pushed
            if pass.decided < Self.batch { break }
        }
        if pushed > 0 { self.store.outbox.wake() }
    }
}
