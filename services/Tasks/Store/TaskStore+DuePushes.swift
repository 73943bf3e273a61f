import Foundation
import GRDB
import HearthCore
import HearthPush
import HearthRelay
import HearthStore

// The prompt scheduler's side: each due prompt's push decided, in one transaction.
extension TaskStore {
    /// When the next prompt's push is to be decided.
    func nextNotifyTime() async throws -> Date? {
        try self.base.read { db in
            try Date.fetchOne(db.cachedStatement(sql: "SELECT MIN(notify_at) FROM prompt WHERE notify_at IS NOT NULL"))
        }
    }

    /// Decides up to `limit` prompts whose time has come, in one transaction: an open prompt
    /// that has not expired gets its "check-in due" push in the outbox; any other is only
    /// marked decided (a prompt that expired while the service was down is not pushed late).
    /// Answers how many were decided and how many pushes were enqueued.
    func notifyDue(now: Date, limit: Int) async throws -> (decided: Int, pushed: Int) {
        try await self.base.write { db in
            let due = try PromptRecord.fetchAll(
                db.cachedStatement(
                    sql:
                        "SELECT * FROM prompt WHERE notify_at IS NOT NULL AND notify_at <= ? ORDER BY notify_at LIMIT ?"
                ),
                arguments: [now, limit]
            )
            var pushed = 0
            for prompt in due {
                var pushedAt: Date?
                if prompt.promptStatus == .open, now < prompt.expiresAt {
                    // The task's language, which its prompt's question is in.
                    let language =
                        try String.fetchOne(
                            db.cachedStatement(sql: "SELECT language FROM task WHERE id = ?"),
                            arguments: [prompt.taskID]
                        ).flatMap(UserLanguage.init(rawValue:)) ?? .english
                    try Outbox.enqueue(
                        PushMessage(
                            id: Self.pushID(prompt.id),
                            userID: prompt.userID,
                            kind: "tasks.prompt_due",
                            title: TaskText.catalog.text(.promptPushTitle, language),
                            body: prompt.question,
                            data: ["task_id": prompt.taskID, "prompt_id": prompt.id],
                            createdAt: now,
                            expiresAt: prompt.expiresAt
                        ),
                        in: db
                    )
                    pushedAt = now
                    pushed += 1
                }
                try db.cachedStatement(sql: "UPDATE prompt SET notify_at = NULL, pushed_at = ? WHERE id = ?").execute(
                    arguments: [pushedAt, prompt.id])
            }
            return (due.count, pushed)
        }
    }
}
