import Foundation
import HearthPostgres
import PostgresNIO

// The statements a due batch runs to decide its switches
// (``PostgresSafetyStore/decideDue(now:limit:claiming:)``), prepared once a connection
// (``PreparedSQL``): what they read of the switches and their facts,
// and what they write of the transitions' effects. Those of many users take them as arrays, so
// their text is the same for one switch and for hundreds (a call's event is a batch of one).

/// When the next switch falls due.
struct NextDecisionTime: PreparedSQL {
    static let sql = Self().query.sql

    var query: PostgresQuery { "SELECT MIN(next_due_at) FROM profile" }
}

/// Up to `limit` switches due at `now`, the soonest first, each row locked as it is read; those
/// another transaction holds are skipped, not waited for.
struct DueProfiles: PreparedSQL {
    static let sql = Self(now: Date(), limit: 0).query.sql
    let now: Date
    let limit: Int

    var query: PostgresQuery {
        """
        \(unescaped: ProfileRecord.selection) FROM profile WHERE next_due_at <= \(self.now.postgres)
        ORDER BY next_due_at LIMIT \(self.limit) FOR NO KEY UPDATE SKIP LOCKED
        """
    }
}

/// The contacts of `users` an alarm at `now` emails (``ContactConsent/receivesAlarms(at:)``): each
/// row a user, a contact's id and its address's key.
struct AlarmContactsOfUsers: PreparedSQL {
    static let sql = Self(users: [], now: Date()).query.sql
    let users: [String]
    let now: Date

    var query: PostgresQuery {
        """
        SELECT user_id, id, email_key FROM contact
        WHERE user_id = ANY(\(self.users))
            AND (state = 'confirmed' OR (state = 'invited' AND alarms_until > \(self.now.postgres)))
        """
    }
}

/// The kinds of messages already decided in each user's epoch: a user and a kind a row.
struct DecidedKinds: PreparedSQL {
    static let sql = Self(users: [], epochs: []).query.sql
    let users: [String]
    let epochs: [Int]

    var query: PostgresQuery {
        """
        SELECT DISTINCT a.user_id, a.kind FROM alert a
        JOIN unnest(\(self.users)::text[], \(self.epochs)::int8[]) AS p(user_id, epoch)
            ON a.user_id = p.user_id AND a.epoch = p.epoch
        """
    }
}

/// Every message of each user since their epoch `checkInEpochs` (their last check-in): a user,
/// then a message's kind, state, contact, whether it may have arrived, and its address's key.
struct PeriodMessageRows: PreparedSQL {
    static let sql = Self(users: [], checkInEpochs: []).query.sql
    let users: [String]
    let checkInEpochs: [Int]

    var query: PostgresQuery {
        """
        SELECT a.user_id, a.kind, a.state, a.contact_id, a.may_have_arrived, a.address_key FROM alert a
        JOIN unnest(\(self.users)::text[], \(self.checkInEpochs)::int8[]) AS p(user_id, epoch)
            ON a.user_id = p.user_id AND a.epoch >= p.epoch
        """
    }
}

/// The users' reminders decided after `since`: a user, the reminder's contact key, and whether
/// it still goes out (not cancelled).
struct RemindersDecided: PreparedSQL {
    static let sql = Self(users: [], since: Date()).query.sql
    let users: [String]
    let since: Date

    var query: PostgresQuery {
        """
        SELECT user_id, contact_id, state <> 'cancelled' FROM alert
        WHERE user_id = ANY(\(self.users)) AND kind = \(MessageKind.reminder) AND created_at > \(self.since.postgres)
        """
    }
}

/// When each user's latest alarm since their epoch `checkInEpochs` was decided, of those that
/// went out or may have: a user and a time a row.
struct LatestAlarms: PreparedSQL {
    static let sql = Self(users: [], checkInEpochs: []).query.sql
    let users: [String]
    let checkInEpochs: [Int]

    var query: PostgresQuery {
        """
        SELECT a.user_id, MAX(a.created_at) FROM alert a
        JOIN unnest(\(self.users)::text[], \(self.checkInEpochs)::int8[]) AS p(user_id, epoch)
            ON a.user_id = p.user_id AND a.epoch >= p.epoch
        WHERE a.kind = \(MessageKind.alert) AND (a.state = 'sent' OR a.may_have_arrived OR a.claimed_at IS NOT NULL)
        GROUP BY a.user_id
        """
    }
}

/// Cancels the pending messages of `users` whose kind is one of `kinds`, and their warnings
/// too when `warnings` (every kind a warning is, whatever its lead).
struct PendingCancels: PreparedSQL {
    static let sql = Self(users: [], scope: .warnings).query.sql
    let users: [String]
    let kinds: [String]
    let warnings: Bool

    /// What a cancel of `scope` takes of `users`' messages (one contact's are ``ContactCancels``).
    init(users: [String], scope: SwitchEffect.CancelScope) {
        switch scope {
        case .warnings: self.init(users: users, kinds: [], warnings: true)
        case .warningsAndAlarms: self.init(users: users, kinds: SafetyStore.cancellableKinds.sorted(), warnings: false)
        case .reminders: self.init(users: users, kinds: [MessageKind.reminder], warnings: false)
        case .contact: preconditionFailure("a contact's messages are cancelled by ContactCancels")
        }
    }

    private init(users: [String], kinds: [String], warnings: Bool) {
        self.users = users
        self.kinds = kinds
        self.warnings = warnings
    }

    var query: PostgresQuery {
        """
        UPDATE alert SET state = 'cancelled', next_attempt_at = NULL, \(unescaped: AlertRecord.forgetPostgres)
        WHERE user_id = ANY(\(self.users)) AND \(unescaped: AlertRecord.pendingOfUsers)
            AND (kind = ANY(\(self.kinds)) OR (\(self.warnings) AND kind LIKE 'warning\\_%'))
        """
    }
}

/// Cancels the pending messages to `contacts`, of `users` (a contact is one user's: its id alone
/// names its messages; the users keep the read along their rows).
struct ContactCancels: PreparedSQL {
    static let sql = Self(contacts: [], users: []).query.sql
    let contacts: [String]
    let users: [String]

    var query: PostgresQuery {
        """
        UPDATE alert SET state = 'cancelled', next_attempt_at = NULL, \(unescaped: AlertRecord.forgetPostgres)
        WHERE contact_id = ANY(\(self.contacts))
            AND user_id = ANY(\(self.users)) AND \(unescaped: AlertRecord.pendingOfUsers)
        """
    }
}

/// The sealed address and name of the contacts `ids`: an id, an address and a name a row.
struct ContactAddresses: PreparedSQL {
    static let sql = Self(ids: []).query.sql
    let ids: [String]

    var query: PostgresQuery { "SELECT id, email, name FROM contact WHERE id = ANY(\(self.ids))" }
}
